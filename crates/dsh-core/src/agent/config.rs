//! How an agent drives the model and what it works with: filled in by the run's installs
//! (`install.rs`) for the top agent and every subagent, never outside core.

use std::sync::Arc;
use std::time::Duration;

use dsh_llm::Effort;
use dsh_protocol::Message;

use crate::auto_review::AutoReviewer;

/// How the agent drives the model.
#[derive(Debug, Clone)]
pub(crate) struct AgentConfig {
    pub(crate) model: String,
    pub(crate) effort: Effort,
    /// A turn that has not answered after this many steps ends with `MAX_STEPS`.
    pub(crate) max_steps: u32,
    pub(crate) max_output_tokens: Option<u32>,
    /// The most parallel-safe calls in flight at once.
    pub(crate) max_parallel_tools: usize,
    /// How long, after the model's answer, to wait for background jobs to finish so it can
    /// answer again with their results.
    pub(crate) job_wait: Duration,
    /// Facts about the run the model should know (the sandbox, the approval policy), appended
    /// to the system prompt: they hold for the whole run, so the prompt stays one cacheable
    /// prefix.
    pub(crate) context: Vec<String>,
    /// The model's context window in tokens; compaction keeps the history inside it.
    pub(crate) context_window: u64,
    /// When compaction starts on its own (`[compaction]`).
    pub(crate) compaction: dsh_config::CompactionRules,
    /// Workspace instructions (AGENTS.md), sent once after the next task.
    pub(crate) instructions: Option<crate::instructions::Delivery>,
    /// How instruction files below the working directory are found as the file tools reach
    /// them; `None` looks for none.
    pub(crate) nested_instructions: Option<dsh_config::project::InstructionSettings>,
    /// `$DSH_HOME` and how instruction messages name it, to deliver the workspace
    /// instructions again after a summary condensed them away.
    pub(crate) instructions_home: Option<(std::path::PathBuf, String)>,
    /// The most tokens the agent may bill, over all its turns, before its turn is ended (a
    /// subagent's budget); `None`: no limit.
    pub(crate) token_budget: Option<u64>,
    /// Kept current with the history of the completed turns, at each turn's start, for tools
    /// that build on it (`subagent_fork`).
    pub(crate) completed_history: Option<Arc<std::sync::Mutex<Vec<Message>>>>,
    /// The allow, ask and deny rules for its calls (`[rules]`); `None`: there are none.
    pub(crate) rules: Option<Arc<dsh_sandbox::rules::CommandRules>>,
    /// The user's hooks (`hooks.json`), with what they run with.
    pub(crate) hooks: Option<Arc<crate::HookRunner>>,
    /// What the final answer must be (`--output-schema`).
    pub(crate) output_schema: Option<Arc<crate::OutputSchema>>,
    /// The user's own text, at the very end of the system prompt (`--system-prompt-append`).
    pub(crate) system_append: Option<String>,
    /// The most model requests one run (a task and the turns its background work wakes) may
    /// make (`--max-turns`).
    pub(crate) max_requests: Option<u32>,
    /// The most one run may cost, in US dollars at the model's prices (`--max-budget-usd`):
    /// its requests come back priced by the provider.
    pub(crate) budget: Option<f64>,
    /// The subagents this agent started in the background: their ended turns are told to the
    /// model like finished jobs, and the run waits for them like for jobs.
    pub(crate) background: Option<Arc<crate::subagents::background::BackgroundAgents>>,
    /// The session's goal, when this agent works toward one: after a turn that completes with
    /// it active and armed, the run goes on with another round.
    pub(crate) goals: Option<Arc<crate::goals::GoalBoard>>,
    /// Who reviews the calls that could change something before they run
    /// (`--permission-mode auto`); `None`: nobody.
    pub(crate) reviewer: Option<Arc<AutoReviewer>>,
    /// Whether another agent gives this one its tasks (a subagent): Auto review is told
    /// its task is not the user's words.
    pub(crate) delegated: bool,
    /// In plan mode, the reviewer that takes over if the user approves the plan to be carried
    /// out under Auto review.
    pub(crate) standby_reviewer: Option<Arc<AutoReviewer>>,
    /// The mode the run's agents work under now, shared with the kit that starts subagents;
    /// `None` for an agent whose mode never changes.
    pub(crate) mode: Option<crate::plan_approval::CurrentMode>,
    /// Whether the session gets a title from the model after its first turn
    /// (`sessions.titles`; the top agent's only).
    pub(crate) titles: bool,
}

impl AgentConfig {
    /// Turns that finished jobs may open after the model's answer, in a row.
    pub(crate) const MAX_WAKES: u32 = 3;

    pub(crate) fn new(model: impl Into<String>) -> Self {
        AgentConfig {
            model: model.into(),
            effort: Effort::default(),
            max_steps: dsh_config::DEFAULT_MAX_STEPS,
            max_output_tokens: None,
            max_parallel_tools: 10,
            job_wait: dsh_config::DEFAULT_JOB_WAIT,
            context: Vec::new(),
            context_window: dsh_config::DEFAULT_CONTEXT_WINDOW,
            compaction: dsh_config::CompactionRules::default(),
            instructions: None,
            nested_instructions: None,
            instructions_home: None,
            token_budget: None,
            completed_history: None,
            rules: None,
            hooks: None,
            output_schema: None,
            system_append: None,
            max_requests: None,
            budget: None,
            background: None,
            goals: None,
            reviewer: None,
            delegated: false,
            standby_reviewer: None,
            mode: None,
            titles: false,
        }
    }
}

/// How many times a turn's Stop hooks may send the model back to work.
pub(crate) const MAX_STOP_BLOCKS: u32 = 3;
