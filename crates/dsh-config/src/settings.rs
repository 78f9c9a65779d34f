//! The settings of one run, resolved once: every default and every precedence rule lives here.
//!
//! Precedence, lowest first: the built-in default, the config files (`$DSH_HOME/config.toml`,
//! `.dsh/config.toml`, each `--patch`), the environment (`DSH_PERMISSION_MODE`,
//! `DEEPSEEK_BASE_URL`), then the flags. Each resolved value carries the layer it came from
//! ([`Source`]), and [`Settings::rows`] lists them all for `--dump-config`: what it prints is
//! what a run uses, because a run is built from the same object.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_llm::{Effort, RetryPolicy};
use dsh_sandbox::SandboxSettings;
use dsh_sandbox::escalation::ApprovalPolicy;
use dsh_tools::ToolFilter;

use super::environment::{Environment, SetupError};
use super::files::{Compression, PermissionMode, SearchProvider};
use super::flags::{Flags, SessionChoice, Usd};
use super::layers::ConfigFiles;
use super::resolver::{Resolver, flag};
use super::route::{DEFAULT_MODEL, Declared, Route};
use super::sections::goals::GoalRules;
use super::sections::instructions::InstructionSettings;
use super::sections::mcp::{Mcp, McpServerSettings};
use super::sections::requests::Requests;
use super::sections::sandbox::Sandbox;
use super::sections::sessions::SessionLog;
use super::sections::skills::Skills;
use super::sections::subagents::SubagentLimits;
use super::sections::tools::Tools;
use super::sections::workflows::WorkflowBounds;
use super::sections::{self, Config};
use super::shown::{SettingRow, Shown};
use super::sourced::{Source, Sourced};
use crate::AutoReviewSettings;

/// The most steps a turn takes unless `--max-steps` says otherwise.
pub const DEFAULT_MAX_STEPS: u32 = 500;

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
    /// The permission mode, `--add-dir` and what confines commands (`[sandbox]`).
    pub(super) sandbox: Sandbox,
    pub(super) approval: Sourced<ApprovalPolicy>,
    /// Which tools are offered (`[tools]`, `preset`).
    pub(super) tools: Tools,
    /// Name fragments of inherited variables kept from commands (upper case).
    pub(super) shell: Sourced<Vec<String>>,
    pub(super) jobs: Sourced<Duration>,
    pub(super) sessions: SessionLog,
    pub(super) requests: Requests,
    pub(super) instructions: InstructionSettings,
    pub(super) skills: Skills,
    pub(super) mcp: Mcp,
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
    /// The allow, ask and deny rules for tool calls (`[rules]`).
    rules: std::sync::Arc<dsh_sandbox::rules::CommandRules>,
    /// The rounds of a session's goal (`[goals]`).
    pub(super) goals: GoalRules,
    /// When the history is compacted on its own (`[compaction]`).
    pub(super) compaction: crate::CompactionRules,
    /// When the terminal UI notifies (`[tui]`).
    pub(super) notify: crate::Notify,
    /// The bounds of a workflow run (`[workflows]`).
    pub(super) workflows: WorkflowBounds,
    /// How calls are reviewed in `--permission-mode auto` (`[auto_review]`).
    pub(super) auto_review: AutoReviewSettings,
    /// How turns are checkpointed (`[checkpoints]`).
    pub(super) checkpoints: crate::CheckpointRules,
    /// Whether saved keys and MCP sign-ins are used (`[stored_auth]`).
    stored_auth: crate::StoredAuth,
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
        &self.sandbox.mode
    }

    /// Keeps a resumed session's permission mode and approval policy (as its log recorded
    /// them) where no flag set them: a session goes on under the permissions it had, and
    /// `--permission-mode` or `--approval-policy` on the resume changes them.
    pub fn keep_session_permissions(&mut self, mode: &str, approval: &str) {
        let flagged = |source: &Source| matches!(source, Source::Flag(_));
        if !flagged(&self.sandbox.mode.source)
            && let Ok(mode) = mode.parse::<PermissionMode>()
        {
            self.sandbox.mode = Sourced::new(mode, Source::Session);
            self.set_row("sandbox.mode", mode.shown());
        }
        if self.sandbox.mode.value.is_plan() {
            self.approval = Sourced::new(ApprovalPolicy::Never, self.sandbox.mode.source.clone());
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
        &self.sandbox.add_dirs
    }

    pub fn sandbox(&self) -> &SandboxSettings {
        &self.sandbox.confinement
    }

    pub fn str_replace_editor(&self) -> &Sourced<bool> {
        &self.tools.str_replace_editor
    }

    pub fn tool_filter(&self) -> &ToolFilter {
        &self.tools.filter
    }

    pub fn scrub(&self) -> &Sourced<Vec<String>> {
        &self.shell
    }

    pub fn job_wait(&self) -> &Sourced<Duration> {
        &self.jobs
    }

    pub fn fsync(&self) -> &Sourced<bool> {
        &self.sessions.fsync
    }

    pub fn compression(&self) -> &Sourced<Compression> {
        &self.sessions.compression
    }

    /// Whether a session gets a title request after its first turn.
    pub fn titles(&self) -> &Sourced<bool> {
        &self.sessions.titles
    }

    pub fn retry(&self) -> &RetryPolicy {
        &self.requests.retry
    }

    pub fn idle_timeout(&self) -> &Sourced<Duration> {
        &self.requests.idle_timeout
    }

    pub fn instructions(&self) -> &InstructionSettings {
        &self.instructions
    }

    pub fn mcp_grace(&self) -> &Sourced<Duration> {
        &self.mcp.startup_grace
    }

    pub fn mcp_servers(&self) -> &Vec<McpServerSettings> {
        &self.mcp.servers
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

    /// The rules every call of the run is checked against (`[rules]`).
    pub fn rules(&self) -> &std::sync::Arc<dsh_sandbox::rules::CommandRules> {
        &self.rules
    }

    pub fn goals(&self) -> GoalRules {
        self.goals
    }

    pub fn compaction(&self) -> crate::CompactionRules {
        self.compaction
    }

    /// When the terminal UI notifies (`tui.notify`).
    pub fn notify(&self) -> crate::Notify {
        self.notify
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

    /// Whether the keys `dsh login` saved and the MCP sign-ins are used.
    pub fn stored_auth(&self) -> &crate::StoredAuth {
        &self.stored_auth
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
        let files = ConfigFiles::load(&home.value, &cwd, env, &flags.patches, !flags.interactive)?;
        // What was set aside may be why a setting is missing: the error says so.
        let notice = files.trust_notice();
        Settings::resolve(files, home, env, flags).map_err(|mut error| {
            if error.code == "CONFIG"
                && let Some(notice) = notice
            {
                error.message.push_str(&format!(" (note: {notice})"));
            }
            error
        })
    }

    /// Applies the environment and the flags over the files, and the defaults under them.
    pub fn resolve(
        files: ConfigFiles,
        home: Sourced<PathBuf>,
        env: &Environment,
        flags: &Flags,
    ) -> Result<Settings, SetupError> {
        let mut r = Resolver::new(files.layered());
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
        let stored_auth =
            sections::stored_auth::resolve(&mut r, &config.stored_auth, flags.headless_profile);
        let credentials = crate::Credentials::load(
            &cwd,
            &home.value,
            env,
            stored_auth.unused_saved_keys(),
            (!files.workspace_env_trusted()).then(|| files.trust().how_to_trust()),
        )?;
        let declared = Declared {
            providers: &config.providers,
            models: &config.models,
        };
        let route = Route::resolve(&mut r, declared, &model, env, &credentials)?;
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
        let sandbox = sections::sandbox::resolve(&mut r, &config.sandbox, env, flags, &cwd)?;
        let approval = sections::approval::resolve(&mut r, &config.approval, flags, &sandbox.mode);
        let tools = sections::tools::resolve(&mut r, &config.tools, config.preset, flags)?;
        let shell = sections::shell::resolve(&mut r, &config.shell);
        let jobs = sections::jobs::resolve(&mut r, &config.jobs);
        let sessions = sections::sessions::resolve(&mut r, &config.sessions, flags);
        let requests = sections::requests::resolve(&mut r, &config.requests);
        let instructions = sections::instructions::resolve(&mut r, &config.instructions);
        let skills = sections::skills::resolve(&mut r, &config.skills);
        let web = sections::web::resolve(&mut r, &config.web, &credentials, &route, &sandbox)?;
        let subagents = sections::subagents::resolve(&mut r, &config.subagents);
        let rules = sections::rules::resolve(&mut r);
        let goals = sections::goals::resolve(&mut r, &config.goals);
        let compaction = sections::compaction::resolve(&mut r, &config.compaction);
        let notify = sections::tui::resolve(&mut r, &config.tui);
        let workflows = sections::workflows::resolve(&mut r, &config.workflows);
        let auto_review = sections::auto_review::resolve(
            &mut r,
            &config.auto_review,
            declared,
            env,
            &credentials,
        )?;
        let checkpoints = sections::checkpoints::resolve(&mut r, &config.checkpoints);
        reviewer_priced(&max_budget_usd, &auto_review)?;
        let mcp = sections::mcp::resolve(&mut r, &config.mcp, &flags.mcp_servers, &cwd)?;
        let redact_secrets = sections::secrets::resolve(&mut r, &config.secrets);
        // Built last, from every secret the settings above know: a server added after this
        // line would leak its secrets.
        let routes: Vec<&Route> = std::iter::once(&route)
            .chain(auto_review.route.as_ref())
            .collect();
        let key_variables = key_variables(&routes, config);
        let redactor = (redact_secrets.value)
            .then(|| {
                let known = super::secrets::Known {
                    files: &files,
                    home: &home.value,
                    credentials: &credentials,
                    key_variables: &key_variables,
                    cwd: &cwd,
                };
                super::secrets::secret_values(&known, &routes, &mcp.servers, &web)
            })
            .and_then(|values| {
                // A server that signs in may renew its token mid-run: a redactor that knows
                // nothing yet is kept for it to learn the token.
                let signs_in = (mcp.servers.iter()).any(|s| s.oauth_setup(&home.value).is_some());
                dsh_tools::Redactor::new(values)
                    .or_else(|| signs_in.then(dsh_tools::Redactor::learning).flatten())
            });
        let mut rows = r.rows;
        add_unread_rows(&mut rows, &files);
        rows.extend(files.trust_rows());
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
            sandbox,
            approval,
            tools,
            shell,
            jobs,
            sessions,
            requests,
            instructions,
            skills,
            mcp,
            web,
            key_variables,
            redact_secrets,
            redactor,
            subagents,
            rules,
            goals,
            compaction,
            notify,
            workflows,
            auto_review,
            checkpoints,
            stored_auth,
            session: chosen_session(flags)?,
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

    /// Where skills are looked for, in rank order ([`Skills::roots`]).
    pub fn skill_roots(&self) -> Vec<PathBuf> {
        (self.skills).roots(&self.cwd, &self.home.value, self.user_home.as_deref())
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

/// Reviews are billed to the run: a budget must be able to price them too.
fn reviewer_priced(
    max_budget_usd: &Sourced<Option<Usd>>,
    auto_review: &AutoReviewSettings,
) -> Result<(), SetupError> {
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
    Ok(())
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
    // Every provider's key variable the files declare, used by this run or not: a key saved
    // for another provider is as secret as this route's, whatever its name.
    let declared = (config.providers.values())
        .filter_map(|provider| provider.api_key_env.clone())
        .chain(std::iter::once("DEEPSEEK_API_KEY".to_owned()));
    for name in declared {
        if !key_variables.contains(&name) {
            key_variables.push(name);
        }
    }
    if config.web.search.provider == Some(SearchProvider::Brave) {
        key_variables.push(
            (config.web.search.api_key_env.clone()).unwrap_or_else(|| "BRAVE_API_KEY".to_owned()),
        );
    }
    key_variables
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

/// The sandbox settings alone, for `dsh sandbox check`: only the `[sandbox]` table of each
/// config file is read, so a problem elsewhere in the settings (another table's keys, a route,
/// a `.env` file) does not hide the sandbox's.
pub fn sandbox_only(
    cwd: PathBuf,
    env: &Environment,
    patches: &[PathBuf],
) -> Result<SandboxSettings, SetupError> {
    let home = home(env)?;
    let files = ConfigFiles::load_only(&home.value, &cwd, env, patches, true, "sandbox")?;
    let mut r = Resolver::new(files.layered());
    sections::sandbox::confinement(&mut r, &files.config().sandbox)
}

/// dsh's home: `DSH_HOME`, else `~/.dsh`.
pub fn home(env: &Environment) -> Result<Sourced<PathBuf>, SetupError> {
    let path = crate::dsh_home(env.raw("DSH_HOME"), env.get("HOME").map(Path::new))?;
    Ok(match env.get("DSH_HOME") {
        Some(_) => Sourced::new(path, Source::Env("DSH_HOME")),
        None => Sourced::default(path),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::McpTransport;

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
        assert_eq!(settings.mcp.servers, [stdio, http]);
        let redactor = settings.redactor().unwrap();
        assert_eq!(
            redactor.redact(
                "editor-env-7Qx2Vb9LmZ4t, Bearer editor-header-3Nw8Rk5JpY1c, production-eu-west"
            ),
            "[REDACTED], [REDACTED], production-eu-west"
        );
    }
}
