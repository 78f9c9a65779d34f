//! What the command line sets (and an editor's own MCP servers): the top layer of every
//! setting, which [`Settings`](crate::Settings) resolves over the environment and the files.

use std::path::PathBuf;

use dsh_llm::Effort;
use dsh_sandbox::escalation::ApprovalPolicy;

use crate::files::{AgentPreset, PermissionMode};
use crate::sections::mcp::McpServerSettings;

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

impl crate::shown::Shown for Usd {
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
    /// `--title`: a headless run asks the model for the session's title after its first turn
    /// (the interactive front ends do by default).
    pub title: bool,
    /// The run is the terminal UI's, not a headless one: the headless profile's patch file
    /// (`$DSH_HOME/profiles/headless/cordis.patch.yml`) does not apply.
    pub interactive: bool,
    /// `--profile headless` (or `dsh headless`) was given: stored authentication (saved keys,
    /// MCP sign-ins) is ignored unless a layer restores it. A run that is headless only because
    /// stdin or stdout is not a terminal is not this profile.
    pub headless_profile: bool,
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
