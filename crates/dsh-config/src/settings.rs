//! The settings of one run, resolved once: every default and every precedence rule lives here.
//!
//! Precedence, lowest first: the built-in default, the config files (`$DSH_HOME/config.toml`,
//! `.dsh/config.toml`, each `--patch`), the environment (`DSH_PERMISSION_MODE`,
//! `DEEPSEEK_BASE_URL`), then the flags. Each resolved value carries the layer it came from
//! ([`Source`]), and [`Settings::rows`] lists them all for `--dump-config`: what it prints is
//! what a run uses, because a run is built from the same object.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_llm::{Effort, RetryPolicy};
use dsh_sandbox::escalation::ApprovalPolicy;
use dsh_sandbox::{BackendChoice, SandboxSettings};
use dsh_tools::ToolFilter;

use super::files::{
    AgentPreset, Compression, Config, McpServerConfig, PermissionMode, SearchProvider,
};
use super::layers::{ConfigFiles, quote_key};
use super::resolver::{Environment, Resolver, SetupError, flag};
use super::route::Route;
use super::shown::{SettingRow, Shown};
use super::sourced::{Source, Sourced};
use crate::project::InstructionSettings;
use crate::{ApiKey, AutoReviewSettings, ProviderKind};

/// The model used when none is named.
pub const DEFAULT_MODEL: &str = "deepseek-v4-flash";
/// The default of an MCP server's `call_timeout_ms` and `startup_timeout_ms`.
const MCP_TIMEOUT_MS: u64 = 60_000;
/// The default of `mcp.startup_grace_ms`.
const MCP_GRACE_MS: u64 = 3_000;
/// The default of `requests.idle_timeout_ms`.
const IDLE_TIMEOUT_MS: u64 = 300_000;
/// The most steps a turn takes unless `--max-steps` says otherwise.
pub const DEFAULT_MAX_STEPS: u32 = 500;
/// How long a command runs in the foreground before it becomes a background job
/// (`jobs.wait_ms`).
pub const DEFAULT_JOB_WAIT: Duration = Duration::from_secs(60);

/// Every tool dsh itself can offer, whichever crate holds it; MCP tools are
/// `mcp__<server>__<tool>`. The names `--tools` and `tools.allow`/`tools.deny` accept: every
/// debug run checks that each tool it registers is here.
pub const BUILTIN_TOOLS: &[&str] = &[
    "ask_user_question",
    "bash",
    "create_goal",
    "edit",
    "exit_plan_mode",
    "get_goal",
    "glob",
    "grep",
    "interrupt_agent",
    "job_kill",
    "job_list",
    "job_output",
    "list_agents",
    "list_mcp_resources",
    "present",
    "ralph",
    "read",
    "read_image",
    "read_mcp_resource",
    "send_message",
    "skill",
    "str_replace_editor",
    "subagent",
    "subagent_fork",
    "todo_write",
    "update_goal",
    "web_fetch",
    "web_search",
    "workflow",
    "write",
];

/// The bounds of one workflow run (`[workflows]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkflowBounds {
    /// How long the run may take, its agents included.
    pub time: Duration,
    /// MiB its script's heap may take.
    pub max_memory_mb: u64,
    /// `agent()` calls it may make.
    pub max_agents: u64,
}

/// What a session's goal defaults to and requires (`[goals]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoalRules {
    /// The round limit of a goal set without one.
    pub default_max_rounds: u64,
    /// The automatic rounds a goal must have had before a round may report it blocked.
    pub blocked_after_rounds: u64,
}

/// The tools of the minimal preset: the reference's two-tool coding agent.
const MINIMAL_TOOLS: [&str; 2] = ["bash", "str_replace_editor"];

/// The session a run continues (or forks), as the flags name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    /// `--session-id ID`.
    Id(String),
    /// `--continue`: the session of the working directory used last. The session store finds
    /// it when the run is built; configuration reads no session logs.
    Latest,
}

impl SessionChoice {
    /// The flag that made the choice.
    pub fn flag(&self) -> &'static str {
        match self {
            SessionChoice::Id(_) => "--session-id",
            SessionChoice::Latest => "--continue",
        }
    }
}

/// An amount of US dollars: positive and finite, so it compares as a whole number would.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Usd(f64);

impl Eq for Usd {}

impl Usd {
    /// `text` as dollars (`0.5`, `$2`), when it is a positive finite amount.
    pub fn parse(text: &str) -> Option<Usd> {
        let amount: f64 = text.trim().trim_start_matches('$').parse().ok()?;
        (amount.is_finite() && amount > 0.0).then_some(Usd(amount))
    }

    pub fn value(self) -> f64 {
        self.0
    }
}

impl super::shown::Shown for Usd {
    fn shown(&self) -> String {
        format!("${}", self.0)
    }
}

/// What the command line sets (and, for `mcp_servers`, an editor); `None` (or empty) leaves a
/// value to the lower layers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    pub model: Option<String>,
    pub effort: Option<Effort>,
    pub max_steps: Option<u32>,
    /// `--max-turns`: the most model requests in the run.
    pub max_turns: Option<u32>,
    /// `--max-budget-usd`: the most the run may cost at the model's prices.
    pub max_budget_usd: Option<Usd>,
    /// `--patch` files, applied in order over the config files.
    pub patches: Vec<PathBuf>,
    pub permission_mode: Option<PermissionMode>,
    pub approval_policy: Option<ApprovalPolicy>,
    /// More writable directories (`--add-dir`), as given.
    pub add_dirs: Vec<PathBuf>,
    /// The session to continue (`--session-id`).
    pub session_id: Option<String>,
    /// `--continue`: the latest session of this directory.
    pub continue_latest: bool,
    /// `--fork`: a new session starting from a copy of the chosen one's history.
    pub fork: bool,
    /// `--system-prompt-append`: text added at the end of the system prompt.
    pub system_prompt_append: Option<String>,
    /// `--output-schema`: a JSON Schema the final answer must match.
    pub output_schema: Option<PathBuf>,
    /// The run is the terminal UI's, not a headless one: the headless profile's patch file
    /// (`$DSH_HOME/profiles/headless/cordis.patch.yml`) does not apply.
    pub interactive: bool,
    /// `--preset`: the tool set to start from.
    pub preset: Option<AgentPreset>,
    /// `--tools`: offer only these tools.
    pub tools: Option<Vec<String>>,
    /// `--disallowed-tools`: never offer these tools.
    pub disallowed_tools: Vec<String>,
    /// MCP servers handed over beside the config's (an editor's own, over ACP); one named as a
    /// config server replaces it. Given here, not added to the settings later, so that the
    /// redactor knows their secrets.
    pub mcp_servers: Vec<McpServerSettings>,
}

/// The bounds on subagents (`[subagents]`); hitting one is a tool error naming its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubagentLimits {
    /// How deep they nest (the top agent's children are depth 1).
    pub max_depth: u32,
    /// How many run at once.
    pub max_concurrent: u32,
    /// How many a run starts in all.
    pub max_total: u32,
    /// The most tokens one subagent may bill, over all its turns.
    pub max_tokens: u64,
}

/// The secret values a run knows: every variable of the launch environment, the `.env` files
/// dsh reads and the project's other `.env.*` files whose name says it is a secret, and the
/// credentials inside any of their values that is a URL (`DATABASE_URL`); the model route's
/// key and credential headers; the MCP servers' secret-named `env` values, credential headers
/// and URL credentials; the search key.
fn secret_values(
    home: &Path,
    credentials: &crate::Credentials,
    cwd: &Path,
    routes: &[&Route],
    mcp_servers: &[McpServerSettings],
    web: &dsh_web::WebSettings,
) -> Vec<String> {
    let root = crate::project::project_root(cwd, &[".git".to_owned()]);
    let project_env = crate::dotenv::project_env_values(cwd, &root);
    let mut values = Vec::new();
    let variables = (credentials.all())
        .chain((project_env.iter()).map(|(name, value)| (name.as_str(), value.as_str())));
    for (name, value) in variables {
        if dsh_tools::is_secret_name(name) {
            values.push(value.to_owned());
        }
        if value.contains("://") {
            values.extend(super::shown::url_credentials(value));
        }
    }
    for route in routes {
        if let crate::ApiKey::Found { value, .. } = &route.api_key {
            values.push(value.clone());
        }
        values.extend(secret_headers(&route.headers));
    }
    for server in mcp_servers {
        match &server.transport {
            McpTransport::Stdio { env, .. } => {
                // Only what is named like a secret: `NODE_ENV = "production"` is not one,
                // and taking it for one would blank the word in every file read.
                values.extend(
                    (env.iter())
                        .filter(|(name, _)| dsh_tools::is_secret_name(name))
                        .map(|(_, value)| value.clone()),
                );
            }
            McpTransport::Http {
                url,
                headers,
                oauth,
            } => {
                values.extend(secret_headers(headers));
                values.extend(super::shown::url_credentials(url));
                if let Some(client) = oauth {
                    values.extend(client.client_secret.clone());
                }
                if let Some(setup) = server.oauth_setup(home) {
                    values.extend(dsh_mcp::oauth::stored_secrets(&setup, url));
                }
            }
        }
    }
    if let Ok(dsh_web::SearchBackend::Brave { api_key, .. }) = &web.search {
        values.push(api_key.clone());
    }
    values
}

/// The values of headers that carry credentials (`Authorization`, `Cookie`, `X-Api-Key`, any
/// name a variable holding a secret could have), and for `<scheme> <credential>` values
/// (`Bearer abc`) the credential alone too, since it is what a command would print.
fn secret_headers(headers: &[(String, String)]) -> Vec<String> {
    let mut values = Vec::new();
    for (name, value) in headers {
        let upper = name.to_uppercase();
        if !(upper.contains("AUTH") || upper.contains("COOKIE") || dsh_tools::is_secret_name(name))
        {
            continue;
        }
        values.push(value.clone());
        if let Some((_, credential)) = value.trim().split_once(' ') {
            values.push(credential.trim().to_owned());
        }
    }
    values
}

/// One MCP server as the run will start it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerSettings {
    pub name: String,
    pub transport: McpTransport,
    pub call_timeout: Duration,
    pub startup_timeout: Duration,
    pub fail_on_startup_error: bool,
}

impl McpServerSettings {
    /// A server handed over by a front end (an editor's own servers, over ACP), with the
    /// defaults a config entry gets: the config's timeouts, and optional, so that a server
    /// that cannot start is reported and the session goes on without its tools.
    pub fn given(name: String, transport: McpTransport) -> McpServerSettings {
        McpServerSettings {
            name,
            transport,
            call_timeout: Duration::from_millis(MCP_TIMEOUT_MS),
            startup_timeout: Duration::from_millis(MCP_TIMEOUT_MS),
            fail_on_startup_error: false,
        }
    }
}

impl McpServerSettings {
    /// Where the server's OAuth sign-in is kept under dsh's home `home`, and how dsh signs in;
    /// `None` for a command server or one that sends its own `Authorization` header.
    pub fn oauth_setup(&self, home: &Path) -> Option<dsh_mcp::oauth::OAuthSetup> {
        match &self.transport {
            McpTransport::Http {
                url,
                oauth: Some(client),
                ..
            } => Some(dsh_mcp::oauth::OAuthSetup::new(
                home,
                &self.name,
                url,
                client.clone(),
            )),
            _ => None,
        }
    }
}

/// How an MCP server is reached.
#[derive(Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process; `env` is set over what it inherits (secrets and `DSH_*` scrubbed).
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: PathBuf,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
        /// How dsh signs in with OAuth; `None` when the configuration sends its own
        /// `Authorization` header.
        oauth: Option<dsh_mcp::oauth::OAuthClient>,
    },
}

/// `env` and `headers` values (and a URL, which can carry a token) often hold secrets: only
/// names are shown.
impl fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.iter().map(|(k, _)| k).collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            McpTransport::Http { headers, .. } => f
                .debug_struct("Http")
                .field(
                    "headers",
                    &headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                )
                .finish_non_exhaustive(),
        }
    }
}

/// Everything a run is built from.
#[derive(Debug, Clone)]
pub struct Settings {
    /// dsh's home (`$DSH_HOME`, else `~/.dsh`).
    pub(super) home: Sourced<PathBuf>,
    /// The working directory: the workspace.
    pub(super) cwd: PathBuf,
    /// The user's home folder (`HOME`), for `~/.agents/skills` and how paths are shown.
    pub(super) user_home: Option<PathBuf>,
    /// The config files read, lowest first.
    pub(super) files: ConfigFiles,
    /// The model reference as given (`<provider>/<model>` or a DeepSeek model name).
    pub(super) model: Sourced<String>,
    /// Where the model is served and what it can do.
    pub(super) route: Route,
    pub(super) effort: Sourced<Effort>,
    pub(super) max_steps: Sourced<u32>,
    pub(super) max_turns: Sourced<Option<u32>>,
    pub(super) max_budget_usd: Sourced<Option<Usd>>,
    /// Added at the end of the system prompt (`--system-prompt-append`, `system_prompt_append`).
    pub(super) system_prompt_append: Sourced<Option<String>>,
    /// The JSON Schema the final answer must match (`--output-schema`).
    pub(super) output_schema: Sourced<Option<PathBuf>>,
    pub(super) permission_mode: Sourced<PermissionMode>,
    pub(super) approval: Sourced<ApprovalPolicy>,
    pub(super) add_dirs: Sourced<Vec<PathBuf>>,
    /// The sandbox backends and the network switch (`[sandbox]`).
    pub(super) sandbox: SandboxSettings,
    pub(super) str_replace_editor: Sourced<bool>,
    /// Which tools are offered by name (`tools.allow`, `tools.deny`, `--tools`,
    /// `--disallowed-tools`).
    pub(super) tool_filter: ToolFilter,
    /// Name fragments of inherited variables kept from commands (upper case).
    pub(super) scrub: Sourced<Vec<String>>,
    pub(super) job_wait: Sourced<Duration>,
    pub(super) fsync: Sourced<bool>,
    pub(super) compression: Sourced<Compression>,
    pub(super) retry: RetryPolicy,
    pub(super) idle_timeout: Sourced<Duration>,
    pub(super) instructions: InstructionSettings,
    pub(super) skills_enabled: Sourced<bool>,
    pub(super) skills_default_roots: Sourced<bool>,
    pub(super) skills_dirs: Sourced<Vec<PathBuf>>,
    pub(super) mcp_grace: Sourced<Duration>,
    /// The enabled servers, in name order.
    pub(super) mcp_servers: Vec<McpServerSettings>,
    /// What the web tools may reach (`[web]`, and the sandbox's network switch).
    pub(super) web: dsh_web::WebSettings,
    /// The variables the run reads keys from (the route's `api_key_env`, the search backend's),
    /// kept from every command whatever their names ([`Settings::key_variables`]).
    key_variables: Vec<String>,
    /// `secrets.redact`: whether the run's secrets are taken out of tool results.
    pub(super) redact_secrets: Sourced<bool>,
    /// What takes them out ([`Settings::redactor`]), built once from the secret values the run
    /// knows (keys, tokens, headers, URL credentials).
    redactor: Option<dsh_tools::Redactor>,
    /// How many subagents, how deep, how costly (`[subagents]`).
    pub(super) subagents: SubagentLimits,
    /// The rounds of a session's goal (`[goals]`).
    pub(super) goals: GoalRules,
    /// The bounds of a workflow run (`[workflows]`).
    pub(super) workflows: WorkflowBounds,
    /// How calls are reviewed in `--permission-mode auto` (`[auto_review]`).
    pub(super) auto_review: AutoReviewSettings,
    /// How turns are checkpointed (`[checkpoints]`).
    pub(super) checkpoints: crate::CheckpointRules,
    /// The session to continue; `None` starts a new one.
    pub(super) session: Option<SessionChoice>,
    /// Whether `session` is copied into a new session instead of continued (`--fork`).
    pub(super) fork: bool,
    rows: Vec<SettingRow>,
}

/// What the run is set up with, read through these accessors; only configuration builds it.
impl Settings {
    pub fn home(&self) -> &Sourced<PathBuf> {
        &self.home
    }

    pub fn cwd(&self) -> &PathBuf {
        &self.cwd
    }

    pub fn user_home(&self) -> &Option<PathBuf> {
        &self.user_home
    }

    pub fn files(&self) -> &ConfigFiles {
        &self.files
    }

    pub fn model(&self) -> &Sourced<String> {
        &self.model
    }

    pub fn route(&self) -> &Route {
        &self.route
    }

    pub fn effort(&self) -> &Sourced<Effort> {
        &self.effort
    }

    pub fn max_steps(&self) -> &Sourced<u32> {
        &self.max_steps
    }

    pub fn max_turns(&self) -> &Sourced<Option<u32>> {
        &self.max_turns
    }

    pub fn max_budget_usd(&self) -> &Sourced<Option<Usd>> {
        &self.max_budget_usd
    }

    pub fn system_prompt_append(&self) -> &Sourced<Option<String>> {
        &self.system_prompt_append
    }

    pub fn output_schema(&self) -> &Sourced<Option<PathBuf>> {
        &self.output_schema
    }

    pub fn permission_mode(&self) -> &Sourced<PermissionMode> {
        &self.permission_mode
    }

    /// Keeps a resumed session's permission mode and approval policy (as its log recorded
    /// them) where no flag set them: a session goes on under the permissions it had, and
    /// `--permission-mode` or `--approval-policy` on the resume changes them.
    pub fn keep_session_permissions(&mut self, mode: &str, approval: &str) {
        let flagged = |source: &Source| matches!(source, Source::Flag(_));
        if !flagged(&self.permission_mode.source)
            && let Ok(mode) = mode.parse::<PermissionMode>()
        {
            self.permission_mode = Sourced::new(mode, Source::Session);
            self.set_row("sandbox.mode", mode.shown());
        }
        if self.permission_mode.value.is_plan() {
            self.approval =
                Sourced::new(ApprovalPolicy::Never, self.permission_mode.source.clone());
        } else if !flagged(&self.approval.source)
            && let Ok(approval) = approval.parse::<ApprovalPolicy>()
        {
            self.approval = Sourced::new(approval, Source::Session);
            self.set_row("approval.policy", approval.shown());
        }
    }

    fn set_row(&mut self, key: &str, value: String) {
        self.rows.retain(|row| row.key != key);
        self.rows
            .push(SettingRow::new(key.to_owned(), value, &Source::Session));
        self.rows.sort_by(|a, b| a.key.cmp(&b.key));
    }

    pub fn approval(&self) -> &Sourced<ApprovalPolicy> {
        &self.approval
    }

    pub fn add_dirs(&self) -> &Sourced<Vec<PathBuf>> {
        &self.add_dirs
    }

    pub fn sandbox(&self) -> &SandboxSettings {
        &self.sandbox
    }

    pub fn str_replace_editor(&self) -> &Sourced<bool> {
        &self.str_replace_editor
    }

    pub fn tool_filter(&self) -> &ToolFilter {
        &self.tool_filter
    }

    pub fn scrub(&self) -> &Sourced<Vec<String>> {
        &self.scrub
    }

    pub fn job_wait(&self) -> &Sourced<Duration> {
        &self.job_wait
    }

    pub fn fsync(&self) -> &Sourced<bool> {
        &self.fsync
    }

    pub fn compression(&self) -> &Sourced<Compression> {
        &self.compression
    }

    pub fn retry(&self) -> &RetryPolicy {
        &self.retry
    }

    pub fn idle_timeout(&self) -> &Sourced<Duration> {
        &self.idle_timeout
    }

    pub fn instructions(&self) -> &InstructionSettings {
        &self.instructions
    }

    pub fn skills_enabled(&self) -> &Sourced<bool> {
        &self.skills_enabled
    }

    pub fn skills_default_roots(&self) -> &Sourced<bool> {
        &self.skills_default_roots
    }

    pub fn skills_dirs(&self) -> &Sourced<Vec<PathBuf>> {
        &self.skills_dirs
    }

    pub fn mcp_grace(&self) -> &Sourced<Duration> {
        &self.mcp_grace
    }

    pub fn mcp_servers(&self) -> &Vec<McpServerSettings> {
        &self.mcp_servers
    }

    pub fn web(&self) -> &dsh_web::WebSettings {
        &self.web
    }

    pub fn redact_secrets(&self) -> &Sourced<bool> {
        &self.redact_secrets
    }

    pub fn subagents(&self) -> &SubagentLimits {
        &self.subagents
    }

    pub fn goals(&self) -> GoalRules {
        self.goals
    }

    pub fn workflows(&self) -> WorkflowBounds {
        self.workflows
    }

    pub fn auto_review(&self) -> &AutoReviewSettings {
        &self.auto_review
    }

    pub fn checkpoints(&self) -> crate::CheckpointRules {
        self.checkpoints
    }

    pub fn session(&self) -> Option<&SessionChoice> {
        self.session.as_ref()
    }

    pub fn fork(&self) -> bool {
        self.fork
    }
}

impl Settings {
    /// Reads the config files for a run in `cwd` and resolves the settings.
    pub fn load(cwd: PathBuf, env: &Environment, flags: &Flags) -> Result<Settings, SetupError> {
        let home = home(env)?;
        let files = ConfigFiles::load(&home.value, &cwd, &flags.patches, !flags.interactive)?;
        Settings::resolve(files, home, env, flags)
    }

    /// Applies the environment and the flags over the files, and the defaults under them.
    pub fn resolve(
        files: ConfigFiles,
        home: Sourced<PathBuf>,
        env: &Environment,
        flags: &Flags,
    ) -> Result<Settings, SetupError> {
        let mut r = Resolver {
            files: &files,
            rows: Vec::new(),
        };
        let config: &Config = files.config();
        let cwd = files.cwd().to_path_buf();
        r.record("home", &home);
        let model = r.setting(
            "model",
            [
                flag(flags.model.clone(), "--model"),
                r.file("model", config.model.clone()),
            ],
            DEFAULT_MODEL.to_owned(),
        );
        let credentials = crate::Credentials::load(&cwd, &home.value, env)?;
        let idle_ms = r.setting(
            "requests.idle_timeout_ms",
            // 0 would give up at once; the shortest wait is 1 ms.
            [r.file(
                "requests.idle_timeout_ms",
                config.requests.idle_timeout_ms.map(|ms| ms.max(1)),
            )],
            IDLE_TIMEOUT_MS,
        );
        let idle_timeout = Sourced::new(Duration::from_millis(idle_ms.value), idle_ms.source);
        let route = Route::resolve(&mut r, &model, env, &credentials)?;
        let effort = r.setting(
            "effort",
            [
                flag(flags.effort, "--effort"),
                r.file("effort", config.effort),
            ],
            Effort::default(),
        );
        let max_steps = r.setting(
            "max_steps",
            [flag(flags.max_steps, "--max-steps")],
            DEFAULT_MAX_STEPS,
        );
        let (system_prompt_append, output_schema) = prompt_additions(&mut r, config, flags);
        let max_turns = r.setting(
            "max_turns",
            [flag(flags.max_turns.map(Some), "--max-turns")],
            None,
        );
        r.none_means(&max_turns, "no limit");
        let max_budget_usd = budget(&mut r, flags, &route)?;
        let (permission_mode, approval) = permission(&mut r, config, env, flags)?;
        let add_dirs = match flags.add_dirs.as_slice() {
            [] => None,
            dirs => Some(check_add_dirs(dirs)?),
        };
        let add_dirs = r.setting(
            "sandbox.add_dirs",
            [flag(add_dirs, "--add-dir")],
            Vec::new(),
        );
        let sandbox = sandbox_settings(&mut r, config);
        let preset = r.setting(
            "preset",
            [
                flag(flags.preset, "--preset"),
                r.file("preset", config.preset),
            ],
            AgentPreset::Standard,
        );
        let minimal = (preset.value == AgentPreset::Minimal).then_some(Source::Preset("minimal"));
        let str_replace_editor = r.setting(
            "tools.str_replace_editor",
            [
                r.file("tools.str_replace_editor", config.tools.str_replace_editor),
                minimal.clone().map(|source| Sourced::new(true, source)),
            ],
            false,
        );
        let tool_filter = tool_filter(&mut r, config, flags, minimal)?;
        let scrub = shell_scrub(&mut r, config);
        let job_wait = r.millis("jobs.wait_ms", config.jobs.wait_ms, DEFAULT_JOB_WAIT);
        let (fsync, compression) = log_settings(&mut r, config);
        let retry = retry_policy(&mut r, &config.requests);
        let instructions = instruction_settings(&mut r, config);
        let (skills_enabled, skills_default_roots, skills_dirs) = skill_settings(&mut r, config);
        let mcp_grace = r.millis(
            "mcp.startup_grace_ms",
            config.mcp.startup_grace_ms,
            Duration::from_millis(MCP_GRACE_MS),
        );
        let web = web_settings(&mut r, config, &credentials, &route, sandbox.network)?;

        let subagents = subagent_limits(&mut r, &config.subagents);
        let goals = goal_rules(&mut r, &config.goals);
        let workflows = workflow_bounds(&mut r, &config.workflows);
        let auto_review =
            super::auto_review::resolve(&mut r, &config.auto_review, env, &credentials)?;
        let checkpoints = super::checkpoints::resolve(&mut r, &config.checkpoints);
        // Reviews are billed to the run: a budget must be able to price them too.
        if let (Some(limit), Some(reviewer)) = (max_budget_usd.value, &auto_review.route)
            && reviewer.prices.value.is_none()
        {
            return Err(SetupError::config(format!(
                "--max-budget-usd {} needs every model the run bills to have prices, and the \
                 Auto review model {} (auto_review.model) has none declared; declare them \
                 ([models.\"{}\".prices], see docs/providers.md#prices) or bound the run with \
                 --max-turns instead",
                limit.value(),
                reviewer.model,
                reviewer.model
            )));
        }
        let mcp_servers = mcp_servers(&mut r, config, flags, &cwd)?;
        let redact_secrets = r.setting(
            "secrets.redact",
            [r.file("secrets.redact", config.secrets.redact)],
            true,
        );
        // Built last, from every secret the settings above know: a server added after this
        // line would leak its secrets.
        let routes: Vec<&Route> = std::iter::once(&route)
            .chain(auto_review.route.as_ref())
            .collect();
        let key_variables = key_variables(&routes, config);
        let redactor = (redact_secrets.value)
            .then(|| secret_values(&home.value, &credentials, &cwd, &routes, &mcp_servers, &web))
            .and_then(|values| {
                // A server that signs in may renew its token mid-run: a redactor that knows
                // nothing yet is kept for it to learn the token.
                let signs_in = (mcp_servers.iter()).any(|s| s.oauth_setup(&home.value).is_some());
                dsh_tools::Redactor::new(values)
                    .or_else(|| signs_in.then(dsh_tools::Redactor::learning).flatten())
            });
        let mut rows = r.rows;
        add_unread_rows(&mut rows, &files);
        let session = chosen_session(flags)?;
        rows.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Settings {
            home,
            cwd,
            user_home: env.get("HOME").map(PathBuf::from),
            model,
            route,
            effort,
            max_steps,
            max_turns,
            max_budget_usd,
            system_prompt_append,
            output_schema,
            permission_mode,
            approval,
            add_dirs,
            sandbox,
            str_replace_editor,
            tool_filter,
            scrub,
            job_wait,
            fsync,
            compression,
            retry,
            idle_timeout,
            instructions,
            skills_enabled,
            skills_default_roots,
            skills_dirs,
            mcp_grace,
            mcp_servers,
            web,
            key_variables,
            redact_secrets,
            redactor,
            subagents,
            goals,
            workflows,
            auto_review,
            checkpoints,
            session,
            fork: flags.fork,
            files,
            rows,
        })
    }

    /// The variables the run reads its keys from: the route's and the search backend's. They
    /// are kept from every command by name, since `shell.scrub`'s fragments may not catch them
    /// (`LLM_ACCESS`).
    pub fn key_variables(&self) -> &[String] {
        &self.key_variables
    }

    /// What takes the run's secrets out of tool results, unless `secrets.redact` is false or
    /// there are none long enough to be keys; a cheap clone of the one built with the settings.
    pub fn redactor(&self) -> Option<dsh_tools::Redactor> {
        self.redactor.clone()
    }

    /// Every value in effect with its source, by key, secrets hidden: what `--dump-config`
    /// prints. The agent adds the two it alone knows: the names of the tools the model is
    /// offered, as the run's builder assembles them, and the id of the chosen session
    /// (`--continue` names none; the session store finds it).
    pub fn rows(&self, offered_tools: Vec<String>, session_id: Option<&str>) -> Vec<SettingRow> {
        let mut rows = self.rows.clone();
        let mut from = "from sandbox.mode, tools.*, skills.* and mcp.servers".to_owned();
        if let Err(why) = &self.web.search {
            from.push_str(&format!("; web_search is off: {why}"));
        }
        rows.push(SettingRow::described(
            "tools".to_owned(),
            offered_tools.shown(),
            from,
        ));
        if let (Some(choice), Some(id)) = (&self.session, session_id) {
            let key = if self.fork {
                "session.fork_from"
            } else {
                "session"
            };
            let id = id.to_owned();
            rows.push(SettingRow::new(
                key.to_owned(),
                id.shown(),
                &Source::Flag(choice.flag()),
            ));
        }
        rows.sort_by(|a, b| a.key.cmp(&b.key));
        rows
    }

    /// How dsh's home is named to the model: `~/.dsh` when it is the default one.
    pub fn home_shown(&self) -> &'static str {
        let default = self.user_home.as_ref().map(|h| h.join(".dsh"));
        if default.as_deref() == Some(self.home.value.as_path()) {
            "~/.dsh"
        } else {
            "$DSH_HOME"
        }
    }

    /// Where skills are looked for, in rank order: the project's `.dsh/skills` and
    /// `.agents/skills` (the project root being the nearest folder with `.git`, else the
    /// working directory), `skills.dirs`, `$DSH_HOME/skills`, `~/.agents/skills`; only
    /// `skills.dirs` when `skills.default_roots` is false; none when `skills.enabled` is false.
    pub fn skill_roots(&self) -> Vec<PathBuf> {
        if !self.skills_enabled.value {
            return Vec::new();
        }
        let dirs = self.skills_dirs.value.iter().map(|d| self.cwd.join(d));
        if !self.skills_default_roots.value {
            return dirs.collect();
        }
        let root = crate::project::project_root(&self.cwd, &[".git".to_owned()]);
        let mut roots = vec![root.join(".dsh/skills"), root.join(".agents/skills")];
        roots.extend(dirs);
        roots.push(self.home.value.join("skills"));
        if let Some(user) = &self.user_home {
            roots.push(user.join(".agents/skills"));
        }
        roots
    }
}

/// `--max-budget-usd`, refused for a model without prices: nothing would count the spend.
fn budget(
    r: &mut Resolver<'_>,
    flags: &Flags,
    route: &Route,
) -> Result<Sourced<Option<Usd>>, SetupError> {
    let max_budget_usd = r.setting(
        "max_budget_usd",
        [flag(flags.max_budget_usd.map(Some), "--max-budget-usd")],
        None,
    );
    r.none_means(&max_budget_usd, "no limit");
    if let Some(limit) = max_budget_usd.value
        && route.prices.value.is_none()
    {
        return Err(SetupError::config(format!(
            "--max-budget-usd {} needs the model's prices to count what the run spends, and \
             {} has none declared; declare them ([models.\"{}\".prices], see \
             docs/providers.md#prices) or bound the run with --max-turns instead",
            limit.value(),
            route.model,
            route.model
        )));
    }
    Ok(max_budget_usd)
}

/// The permission mode (`--permission-mode`, `DSH_PERMISSION_MODE`, `sandbox.mode`) and the
/// approval policy that goes with it.
fn permission(
    r: &mut Resolver<'_>,
    config: &Config,
    env: &Environment,
    flags: &Flags,
) -> Result<(Sourced<PermissionMode>, Sourced<ApprovalPolicy>), SetupError> {
    let env_mode = match env.get("DSH_PERMISSION_MODE") {
        None => None,
        Some(value) => Some(Sourced::new(
            value.trim().parse::<PermissionMode>().map_err(|_| {
                SetupError::config(format!(
                    "DSH_PERMISSION_MODE must be {}, got \"{value}\"",
                    PermissionMode::CHOICES
                ))
            })?,
            Source::Env("DSH_PERMISSION_MODE"),
        )),
    };
    let permission_mode = r.setting(
        "sandbox.mode",
        [
            flag(flags.permission_mode, "--permission-mode"),
            env_mode,
            r.file("sandbox.mode", config.sandbox.mode),
        ],
        PermissionMode::WorkspaceWrite,
    );
    let approval = r.setting(
        "approval.policy",
        [
            flag(flags.approval_policy, "--approval-policy"),
            r.file("approval.policy", config.approval.policy),
        ],
        // Auto review has nothing wider to ask for either, but a denial is put to the user
        // where there is one to ask (the terminal UI, an editor).
        if permission_mode.value.is_auto() {
            ApprovalPolicy::Ask
        } else {
            ApprovalPolicy::default_for(permission_mode.value.sandbox())
        },
    );
    // Plan mode changes nothing, so there is nothing wider to ask for.
    let approval = if permission_mode.value.is_plan() {
        r.explain_last("never: plan mode asks for nothing wider");
        Sourced::new(ApprovalPolicy::Never, permission_mode.source.clone())
    } else {
        approval
    };
    Ok((permission_mode, approval))
}

/// `[requests]`: how often and how long to retry an outage.
fn retry_policy(r: &mut Resolver<'_>, requests: &super::files::RequestsConfig) -> RetryPolicy {
    let defaults = RetryPolicy::default();
    RetryPolicy {
        retries: r
            .setting(
                "requests.retries",
                [r.file("requests.retries", requests.retries)],
                defaults.retries,
            )
            .value,
        base_delay: r
            .millis(
                "requests.retry_base_ms",
                requests.retry_base_ms,
                defaults.base_delay,
            )
            .value,
        max_delay: r
            .millis(
                "requests.retry_max_ms",
                requests.retry_max_ms,
                defaults.max_delay,
            )
            .value,
        max_retry_after: r
            .millis(
                "requests.retry_after_max_ms",
                requests.retry_after_max_ms,
                defaults.max_retry_after,
            )
            .value,
    }
}

/// `[instructions]`: which workspace instruction files are delivered, and how much of them.
fn instruction_settings(r: &mut Resolver<'_>, config: &Config) -> InstructionSettings {
    let defaults = InstructionSettings::default();
    InstructionSettings {
        enabled: r
            .setting(
                "instructions.enabled",
                [r.file("instructions.enabled", config.instructions.enabled)],
                defaults.enabled,
            )
            .value,
        max_bytes: r
            .setting(
                "instructions.max_bytes",
                [r.file("instructions.max_bytes", config.instructions.max_bytes)],
                defaults.max_bytes,
            )
            .value,
        root_markers: r
            .setting(
                "instructions.root_markers",
                [r.file(
                    "instructions.root_markers",
                    config.instructions.root_markers.clone(),
                )],
                defaults.root_markers,
            )
            .value,
    }
}

/// The variables the run's keys are read from: the route's, and the search backend's.
fn key_variables(routes: &[&Route], config: &Config) -> Vec<String> {
    let mut key_variables = Vec::new();
    for route in routes {
        if let crate::ApiKey::Found { env, .. } | crate::ApiKey::Missing { env, .. } =
            &route.api_key
            && !key_variables.contains(env)
        {
            key_variables.push(env.clone());
        }
    }
    if config.web.search.provider == Some(SearchProvider::Brave) {
        key_variables.push(
            (config.web.search.api_key_env.clone()).unwrap_or_else(|| "BRAVE_API_KEY".to_owned()),
        );
    }
    key_variables
}

/// `[workflows]`: how long a workflow run may take, its script's heap, and its agents.
fn workflow_bounds(
    r: &mut Resolver<'_>,
    workflows: &super::files::WorkflowsConfig,
) -> WorkflowBounds {
    let time = r.millis(
        "workflows.timeout_ms",
        workflows.timeout_ms,
        Duration::from_secs(3600),
    );
    WorkflowBounds {
        time: time.value,
        max_memory_mb: r
            .setting(
                "workflows.max_memory_mb",
                [r.file("workflows.max_memory_mb", workflows.max_memory_mb)],
                64,
            )
            .value,
        max_agents: r
            .setting(
                "workflows.max_agents",
                [r.file("workflows.max_agents", workflows.max_agents)],
                1000,
            )
            .value,
    }
}

/// `[goals]`: a goal's default round limit, and the rounds before one may be reported blocked.
fn goal_rules(r: &mut Resolver<'_>, goals: &super::files::GoalsConfig) -> GoalRules {
    GoalRules {
        default_max_rounds: r
            .setting(
                "goals.default_max_rounds",
                [r.file("goals.default_max_rounds", goals.default_max_rounds)],
                256,
            )
            .value,
        blocked_after_rounds: r
            .setting(
                "goals.blocked_after_rounds",
                [r.file("goals.blocked_after_rounds", goals.blocked_after_rounds)],
                3,
            )
            .value,
    }
}

/// `[subagents]`: how deep, how many at once and in all, and how many tokens.
fn subagent_limits(r: &mut Resolver<'_>, limits: &super::files::SubagentsConfig) -> SubagentLimits {
    SubagentLimits {
        max_depth: r
            .setting(
                "subagents.max_depth",
                [r.file("subagents.max_depth", limits.max_depth)],
                2,
            )
            .value,
        max_concurrent: r
            .setting(
                "subagents.max_concurrent",
                [r.file("subagents.max_concurrent", limits.max_concurrent)],
                4,
            )
            .value,
        max_total: r
            .setting(
                "subagents.max_total",
                [r.file("subagents.max_total", limits.max_total)],
                16,
            )
            .value,
        max_tokens: r
            .setting(
                "subagents.max_tokens",
                [r.file("subagents.max_tokens", limits.max_tokens)],
                2_000_000,
            )
            .value,
    }
}

/// The session to resume (`--session-id`, `--continue`).
fn chosen_session(flags: &Flags) -> Result<Option<SessionChoice>, SetupError> {
    let session = match (&flags.session_id, flags.continue_latest) {
        (Some(_), true) => {
            return Err(SetupError::config(
                "--continue and --session-id both choose the session: give one".into(),
            ));
        }
        (Some(id), false) => Some(SessionChoice::Id(id.clone())),
        (None, true) => Some(SessionChoice::Latest),
        (None, false) => None,
    };
    if flags.fork && session.is_none() {
        return Err(SetupError::config(
            "--fork copies a session: name it with --session-id ID, or --continue for the \
             latest"
                .into(),
        ));
    }
    Ok(session)
}

/// What the run adds to the prompt (`--system-prompt-append`) and asks of the answer
/// (`--output-schema`).
fn prompt_additions(
    r: &mut Resolver<'_>,
    config: &Config,
    flags: &Flags,
) -> (Sourced<Option<String>>, Sourced<Option<PathBuf>>) {
    let system_prompt_append = r.setting(
        "system_prompt_append",
        [
            flag(
                flags.system_prompt_append.clone().map(Some),
                "--system-prompt-append",
            ),
            r.file(
                "system_prompt_append",
                config.system_prompt_append.clone().map(Some),
            ),
        ],
        None,
    );
    r.none_means(&system_prompt_append, "nothing added");
    let output_schema = r.setting(
        "output_schema",
        [flag(
            flags.output_schema.clone().map(Some),
            "--output-schema",
        )],
        None,
    );
    r.none_means(&output_schema, "any answer");
    (system_prompt_append, output_schema)
}

/// `shell.scrub`: the name fragments of variables kept from commands, upper-cased.
fn shell_scrub(r: &mut Resolver<'_>, config: &Config) -> Sourced<Vec<String>> {
    r.setting(
        "shell.scrub",
        [r.file(
            "shell.scrub",
            config
                .shell
                .scrub
                .as_ref()
                .map(|s| s.iter().map(|f| f.to_uppercase()).collect()),
        )],
        dsh_tools::DEFAULT_SCRUB
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
    )
}

/// `[skills]`: whether skills are found, in the default folders, and in which others.
fn skill_settings(
    r: &mut Resolver<'_>,
    config: &Config,
) -> (Sourced<bool>, Sourced<bool>, Sourced<Vec<PathBuf>>) {
    let skills_enabled = r.setting(
        "skills.enabled",
        [r.file("skills.enabled", config.skills.enabled)],
        true,
    );
    let skills_default_roots = r.setting(
        "skills.default_roots",
        [r.file("skills.default_roots", config.skills.default_roots)],
        true,
    );
    let skills_dirs = r.setting(
        "skills.dirs",
        [r.file(
            "skills.dirs",
            (!config.skills.dirs.is_empty()).then(|| config.skills.dirs.clone()),
        )],
        Vec::new(),
    );
    (skills_enabled, skills_default_roots, skills_dirs)
}

/// The MCP servers the config enables, then the ones a front end hands over (an editor's),
/// which replace a server of the same name.
fn mcp_servers(
    r: &mut Resolver<'_>,
    config: &Config,
    flags: &Flags,
    cwd: &Path,
) -> Result<Vec<McpServerSettings>, SetupError> {
    let mut mcp_servers = config
        .mcp
        .servers
        .iter()
        .filter(|(_, server)| server.enabled != Some(false))
        .map(|(name, server)| mcp_server(r, name, server, cwd))
        .collect::<Result<Vec<_>, _>>()?;
    for server in &flags.mcp_servers {
        mcp_servers.retain(|s| s.name != server.name);
        mcp_servers.push(server.clone());
    }
    Ok(mcp_servers)
}

/// What the files set that no setting reads on its own (routes and models not in use, MCP
/// servers' commands and secrets), as rows shown as the files give it.
fn add_unread_rows(rows: &mut Vec<SettingRow>, files: &ConfigFiles) {
    for (key, value, path) in files.provenance() {
        let covered = rows.iter().any(|row| {
            key == row.key
                || key
                    .strip_prefix(row.key.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
        });
        if !covered {
            rows.push(SettingRow::new(key, value, &Source::File(path)));
        }
    }
}

/// `[sessions]`: how the session log is written.
fn log_settings(r: &mut Resolver<'_>, config: &Config) -> (Sourced<bool>, Sourced<Compression>) {
    let fsync = r.setting(
        "sessions.fsync",
        [r.file("sessions.fsync", config.sessions.fsync)],
        false,
    );
    let compression = r.setting(
        "sessions.compression",
        [r.file("sessions.compression", config.sessions.compression)],
        Compression::None,
    );
    (fsync, compression)
}

/// Which tools are offered. An allow list comes from `--tools`, else the last layer that gives
/// `tools.allow`; deny lists add up: every layer's `tools.deny` and `--disallowed-tools` (a tool
/// any of them withholds stays withheld). Every name must cover a tool dsh has.
fn tool_filter(
    r: &mut Resolver<'_>,
    config: &Config,
    flags: &Flags,
    minimal: Option<Source>,
) -> Result<ToolFilter, SetupError> {
    let allow = r.setting(
        "tools.allow",
        [
            flag(flags.tools.clone().map(Some), "--tools"),
            r.file("tools.allow", config.tools.allow.clone().map(Some)),
            minimal.map(|source| {
                Sourced::new(Some(MINIMAL_TOOLS.map(str::to_owned).to_vec()), source)
            }),
        ],
        None,
    );
    r.none_means(&allow, "all");
    let mut deny = Vec::new();
    let mut sources: Vec<String> = Vec::new();
    let from_files = r.files().every_layer_list(&["tools", "deny"]);
    let from_flag = flags
        .disallowed_tools
        .iter()
        .map(|name| (name.clone(), "--disallowed-tools".to_owned()));
    for (name, source) in from_files
        .into_iter()
        .map(|(name, path)| (name, path.display().to_string()))
        .chain(from_flag)
    {
        if !deny.contains(&name) {
            deny.push(name);
        }
        if !sources.contains(&source) {
            sources.push(source);
        }
    }
    let source = if sources.is_empty() {
        Source::Default.to_string()
    } else {
        sources.join(", ")
    };
    r.record_text("tools.deny", deny.shown(), source);
    let filter = ToolFilter {
        allow: allow.value,
        deny,
    };
    if let Some(name) = filter.unknown_name(BUILTIN_TOOLS) {
        return Err(SetupError::config(format!(
            "the tool list names \"{name}\", which is no tool dsh has: use the names of \
             built-in tools ({}) or mcp__<server>__<tool> (a trailing * covers several)",
            BUILTIN_TOOLS.join(", ")
        )));
    }
    Ok(filter)
}

/// `[web]`: what web_fetch may reach and where web_search searches. A search backend that
/// cannot be used (no key) is not an error of the run: the model is told when it searches.
fn web_settings(
    r: &mut Resolver<'_>,
    config: &Config,
    credentials: &crate::Credentials,
    route: &Route,
    network: bool,
) -> Result<dsh_web::WebSettings, SetupError> {
    let web = &config.web;
    let allow_private = r.setting(
        "web.allow_private_addresses",
        [r.file("web.allow_private_addresses", web.allow_private_addresses)],
        false,
    );
    let fetch_timeout = r.millis(
        "web.fetch_timeout_ms",
        web.fetch_timeout_ms.map(|ms| ms.max(1)),
        Duration::from_secs(30),
    );
    let search_timeout = r.millis(
        "web.search.timeout_ms",
        web.search.timeout_ms.map(|ms| ms.max(1)),
        Duration::from_secs(60),
    );
    // The route's own service searches when it can: no other account or server needed.
    let native = native_service(route).map(|_| SearchProvider::Native);
    let provider = r.setting(
        "web.search.provider",
        [r.file("web.search.provider", web.search.provider.map(Some))],
        native,
    );
    r.none_means(&provider, "none: web_search is not offered");
    let base_url = |default: Option<&str>, r: &mut Resolver<'_>| {
        let url = r.setting(
            "web.search.base_url",
            [r.file("web.search.base_url", web.search.base_url.clone().map(Some))],
            default.map(str::to_owned),
        );
        url.value
    };
    let search = match provider.value {
        None => Err(dsh_web::NO_BACKEND.to_owned()),
        Some(SearchProvider::Native) => native_search(r, web, route),
        Some(SearchProvider::Searxng) => match base_url(None, r) {
            Some(base_url) => Ok(dsh_web::SearchBackend::Searxng { base_url }),
            None => {
                return Err(SetupError::config(
                    "config web.search.base_url: the searxng provider needs the address of a \
                     SearXNG instance whose JSON API is on (search.formats includes json)"
                        .into(),
                ));
            }
        },
        Some(SearchProvider::Brave) => {
            let base_url = base_url(Some("https://api.search.brave.com"), r).unwrap_or_default();
            // The key goes in a header: never over plain http.
            if !base_url.starts_with("https://") {
                return Err(SetupError::config(
                    "config web.search.base_url: the brave provider's key is sent with every \
                     request, so its base URL must be https://"
                        .into(),
                ));
            }
            let env = r.setting(
                "web.search.api_key_env",
                [r.file("web.search.api_key_env", web.search.api_key_env.clone())],
                "BRAVE_API_KEY".to_owned(),
            );
            match credentials.get(&env.value) {
                Some((api_key, _)) if !api_key.is_empty() => {
                    Ok(dsh_web::SearchBackend::Brave { base_url, api_key })
                }
                _ => Err(format!(
                    "Brave search has no API key: set {} in the environment (or name another \
                     variable in web.search.api_key_env)",
                    env.value
                )),
            }
        }
    };
    Ok(dsh_web::WebSettings {
        network,
        allow_private: allow_private.value,
        fetch_timeout: fetch_timeout.value,
        search,
        search_timeout: search_timeout.value,
    })
}

/// The hosted search of the route's provider, when it has one dsh can use: DeepSeek's and
/// Anthropic's Messages APIs offer a `web_search` server tool.
fn native_service(route: &Route) -> Option<&'static str> {
    match route.kind.value {
        ProviderKind::DeepSeek => Some("DeepSeek"),
        ProviderKind::AnthropicMessages => Some("Anthropic"),
        _ => None,
    }
}

/// `web.search.provider = "native"`: searches through the route's provider, on its key. Its
/// Messages API root is DeepSeek's Anthropic-compatible one (`<route base>/anthropic/v1`) or
/// an Anthropic route's own base URL; `web.search.base_url` and `web.search.model` replace
/// them.
fn native_search(
    r: &mut Resolver<'_>,
    web: &super::files::WebConfig,
    route: &Route,
) -> Result<dsh_web::SearchBackend, String> {
    let Some(service) = native_service(route) else {
        return Err(format!(
            "the native search provider searches through the route's own service, which \
             DeepSeek and Anthropic routes have; route \"{}\" is {}: set web.search.provider \
             to searxng or brave",
            route.provider,
            route.kind.value.shown()
        ));
    };
    let route_base = route.base_url.value.trim_end_matches('/');
    let derived = match route.kind.value {
        ProviderKind::DeepSeek => format!("{route_base}/anthropic/v1"),
        _ => route_base.to_owned(),
    };
    let base_url = r
        .setting(
            "web.search.base_url",
            [r.file("web.search.base_url", web.search.base_url.clone())],
            derived,
        )
        .value;
    // The route's key goes with every search: over https, or to this machine only.
    let local = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        .iter()
        .any(|prefix| base_url.starts_with(prefix));
    if !base_url.starts_with("https://") && !local {
        return Err(format!(
            "web.search.base_url \"{base_url}\" is not https: the native search sends the \
             route's key with every request, so give an https:// address (or one on this machine)"
        ));
    }
    let default_model = match route.kind.value {
        ProviderKind::DeepSeek => "deepseek-v4-flash".to_owned(),
        _ => route.model.clone(),
    };
    let model = r
        .setting(
            "web.search.model",
            [r.file("web.search.model", web.search.model.clone())],
            default_model,
        )
        .value;
    let prices = match route.kind.value {
        ProviderKind::DeepSeek => dsh_llm::deepseek::prices(&model),
        _ if model == route.model => route.prices.value,
        _ => None,
    };
    match &route.api_key {
        ApiKey::Found { value, .. } => Ok(dsh_web::SearchBackend::Native(dsh_web::NativeSearch {
            service,
            base_url,
            api_key: value.clone(),
            model,
            prices,
        })),
        ApiKey::NotNeeded => Err(format!(
            "{service} search needs the route's key, and route \"{}\" declares none",
            route.provider
        )),
        ApiKey::Missing { message, .. } => Err(format!("{service} search has no key: {message}")),
    }
}

/// `[sandbox]`: which backends may confine commands, and whether they may use the network.
fn sandbox_settings(r: &mut Resolver<'_>, config: &Config) -> SandboxSettings {
    let backend = r.setting(
        "sandbox.backend",
        [r.file("sandbox.backend", config.sandbox.backend)],
        BackendChoice::Auto,
    );
    let network = r.setting(
        "sandbox.network",
        [r.file("sandbox.network", config.sandbox.network)],
        true,
    );
    let bwrap = r.setting(
        "sandbox.bwrap",
        [r.file("sandbox.bwrap", config.sandbox.bwrap.clone().map(Some))],
        None,
    );
    r.none_means(&bwrap, "looked up: the system folders, then PATH");
    let helper = r.setting(
        "sandbox.helper",
        [r.file("sandbox.helper", config.sandbox.helper)],
        true,
    );
    let max_memory_mb = r.setting(
        "sandbox.max_memory_mb",
        [r.file(
            "sandbox.max_memory_mb",
            config.sandbox.max_memory_mb.map(Some),
        )],
        None,
    );
    r.none_means(&max_memory_mb, "no limit");
    let max_processes = r.setting(
        "sandbox.max_processes",
        [r.file(
            "sandbox.max_processes",
            config.sandbox.max_processes.map(Some),
        )],
        None,
    );
    r.none_means(&max_processes, "no limit");
    SandboxSettings {
        backend: backend.value,
        network: network.value,
        bwrap: bwrap.value,
        helper: helper.value,
        limits: dsh_sandbox::CommandLimits {
            memory_bytes: max_memory_mb.value.map(|mb| mb.saturating_mul(1 << 20)),
            processes: max_processes.value,
        },
    }
}

/// The sandbox settings alone, for `dsh sandbox check`: only the `[sandbox]` table of each
/// config file is read, so a problem elsewhere in the settings (another table's keys, a route,
/// a `.env` file) does not hide the sandbox's.
pub fn sandbox_only(
    cwd: PathBuf,
    env: &Environment,
    patches: &[PathBuf],
) -> Result<SandboxSettings, SetupError> {
    let home = home(env)?;
    let files = ConfigFiles::load_only(&home.value, &cwd, patches, true, "sandbox")?;
    let mut r = Resolver {
        files: &files,
        rows: Vec::new(),
    };
    Ok(sandbox_settings(&mut r, files.config()))
}

/// dsh's home: `DSH_HOME`, else `~/.dsh`.
pub fn home(env: &Environment) -> Result<Sourced<PathBuf>, SetupError> {
    let path = crate::dsh_home(env.raw("DSH_HOME"), env.get("HOME").map(Path::new))?;
    Ok(match env.get("DSH_HOME") {
        Some(_) => Sourced::new(path, Source::Env("DSH_HOME")),
        None => Sourced::default(path),
    })
}

/// `--add-dir` grants: each an absolute path to an existing directory, given as its real path
/// (a symlinked or relative spelling could later point somewhere else).
fn check_add_dirs(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, SetupError> {
    dirs.iter()
        .map(|dir| {
            let shown = dir.display();
            if !dir.is_absolute() {
                return Err(SetupError::config(format!(
                    "--add-dir \"{shown}\" is not an absolute path; give the directory's full \
                     real path"
                )));
            }
            let real = std::fs::canonicalize(dir).map_err(|e| {
                SetupError::config(format!(
                    "--add-dir \"{shown}\" cannot be used: {}; give an existing directory",
                    match e.kind() {
                        std::io::ErrorKind::NotFound => "it does not exist".to_owned(),
                        _ => e.to_string(),
                    }
                ))
            })?;
            if !real.is_dir() {
                return Err(SetupError::config(format!(
                    "--add-dir \"{shown}\" is not a directory; give a directory to make writable"
                )));
            }
            if real != *dir {
                return Err(SetupError::config(format!(
                    "--add-dir \"{shown}\" is not a physical path: it resolves to \"{}\"; \
                     give that path instead",
                    real.display()
                )));
            }
            Ok(real)
        })
        .collect()
}

/// One configured MCP server, checked; its defaults recorded.
fn mcp_server(
    r: &mut Resolver<'_>,
    name: &str,
    config: &McpServerConfig,
    cwd: &Path,
) -> Result<McpServerSettings, SetupError> {
    let file = r
        .files()
        .source_of(&format!("mcp.servers.{}", quote_key(name)));
    let fail = |what: String| {
        SetupError::config(format!(
            "config mcp.servers.{name} ({}): {what}",
            file.display()
        ))
    };
    if !dsh_mcp::valid_server_name(name) {
        return Err(fail(
            "the name must be 1 to 32 letters, digits, `_` or `-`, without `__` and not \
             ending in `_` (it becomes part of each tool's name, mcp__<server>__<tool>)"
                .into(),
        ));
    }
    let transport = match (&config.command, &config.url) {
        (Some(command), None) => {
            if !config.headers.is_empty() {
                return Err(fail("headers are for url servers; remove them".into()));
            }
            if config.oauth.is_some() {
                return Err(fail(
                    "oauth is for url servers (a command server signs in its own way); remove \
                     it"
                    .into(),
                ));
            }
            McpTransport::Stdio {
                command: command.clone(),
                args: config.args.clone(),
                env: config
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                cwd: config
                    .cwd
                    .as_ref()
                    .map_or_else(|| cwd.to_path_buf(), |dir| cwd.join(dir)),
            }
        }
        (None, Some(url)) => {
            let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
            if !matches!(scheme.as_deref(), Some("http" | "https")) {
                // Not quoted: a URL can carry a token, and errors are not the place for it.
                return Err(fail(
                    "url is not an http:// or https:// address; give the server's full URL".into(),
                ));
            }
            if !config.args.is_empty() || !config.env.is_empty() || config.cwd.is_some() {
                return Err(fail(
                    "args, env and cwd are for command servers; remove them".into(),
                ));
            }
            McpTransport::Http {
                url: url.clone(),
                headers: config
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                oauth: oauth_client(config).map_err(fail)?,
            }
        }
        (Some(_), Some(_)) => {
            return Err(fail(
                "give either command (a stdio server) or url (an HTTP server), not both".into(),
            ));
        }
        (None, None) => {
            return Err(fail(
                "give command (a stdio server) or url (an HTTP server)".into(),
            ));
        }
    };
    let prefix = format!("mcp.servers.{}", quote_key(name));
    let mut timeout = |field: &str, value: Option<u64>| {
        if value == Some(0) {
            return Err(fail(format!("{field} must be more than 0")));
        }
        Ok(r.millis(
            &format!("{prefix}.{field}"),
            value,
            Duration::from_millis(MCP_TIMEOUT_MS),
        )
        .value)
    };
    let call_timeout = timeout("call_timeout_ms", config.call_timeout_ms)?;
    let startup_timeout = timeout("startup_timeout_ms", config.startup_timeout_ms)?;
    let key = format!("{prefix}.fail_on_startup_error");
    let fail_on_startup_error = r
        .setting(&key, [r.file(&key, config.fail_on_startup_error)], false)
        .value;
    Ok(McpServerSettings {
        name: name.to_owned(),
        transport,
        call_timeout,
        startup_timeout,
        fail_on_startup_error,
    })
}

/// How dsh signs in to a url server: `None` when the configuration sends its own
/// `Authorization` header (then the server's auth is the user's business), else the `oauth`
/// table's settings (all optional).
fn oauth_client(
    config: &crate::files::McpServerConfig,
) -> Result<Option<dsh_mcp::oauth::OAuthClient>, String> {
    let own_header = (config.headers.keys()).any(|k| k.eq_ignore_ascii_case("authorization"));
    let Some(oauth) = &config.oauth else {
        return Ok((!own_header).then(Default::default));
    };
    if own_header {
        return Err(
            "give either an Authorization header or an oauth table, not both; remove one".into(),
        );
    }
    if oauth.client_secret.is_some() && oauth.client_id.is_none() {
        return Err("oauth.client_secret needs the oauth.client_id it belongs to".into());
    }
    if let Some(document) = &oauth.client_metadata_url {
        let https = url_has_path(document) && document.to_ascii_lowercase().starts_with("https://");
        if !https {
            return Err(
                "oauth.client_metadata_url must be an https:// address with a path (the client \
                 ID metadata document describing dsh)"
                    .into(),
            );
        }
    }
    if oauth
        .scopes
        .iter()
        .any(|s| s.is_empty() || s.contains(char::is_whitespace))
    {
        return Err("oauth.scopes takes one scope per entry, without spaces".into());
    }
    Ok(Some(dsh_mcp::oauth::OAuthClient {
        client_id: oauth.client_id.clone(),
        client_secret: oauth.client_secret.clone(),
        client_metadata_url: oauth.client_metadata_url.clone(),
        scopes: oauth.scopes.clone(),
        callback_port: oauth.callback_port.filter(|p| *p != 0),
    }))
}

/// Whether `address` has a path beyond `/` after its host.
fn url_has_path(address: &str) -> bool {
    address
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('/'))
        .is_some_and(|(_, path)| !path.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_a_front_end_hands_over_replace_the_configs_and_their_secrets_are_redacted() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "[mcp.servers.tools]\ncommand = \"from-config\"\n",
        )
        .unwrap();
        let env = Environment::from_pairs([
            ("HOME".to_owned(), home.path().display().to_string()),
            ("DSH_HOME".to_owned(), home.path().display().to_string()),
            ("DEEPSEEK_API_KEY".to_owned(), "k".to_owned()),
        ]);
        let stdio = McpServerSettings::given(
            "tools".into(),
            McpTransport::Stdio {
                command: "from-editor".into(),
                args: Vec::new(),
                env: vec![
                    ("EDITOR_API_TOKEN".into(), "editor-env-7Qx2Vb9LmZ4t".into()),
                    ("NODE_ENV".into(), "production-eu-west".into()),
                ],
                cwd: ws.path().to_path_buf(),
            },
        );
        let http = McpServerSettings::given(
            "web".into(),
            McpTransport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: vec![(
                    "Authorization".into(),
                    "Bearer editor-header-3Nw8Rk5JpY1c".into(),
                )],
                oauth: None,
            },
        );
        let flags = Flags {
            interactive: true,
            mcp_servers: vec![stdio.clone(), http.clone()],
            ..Flags::default()
        };
        let settings = Settings::load(ws.path().to_path_buf(), &env, &flags).unwrap();
        assert_eq!(settings.mcp_servers, [stdio, http]);
        let redactor = settings.redactor().unwrap();
        assert_eq!(
            redactor.redact(
                "editor-env-7Qx2Vb9LmZ4t, Bearer editor-header-3Nw8Rk5JpY1c, production-eu-west"
            ),
            "[REDACTED], [REDACTED], production-eu-west"
        );
    }
}
