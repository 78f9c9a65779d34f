//! The agent: a provider, tools and a session, driven through turns.
//!
//! - `run.rs`: the loops around a turn ([`Agent::run`]: the task's turn, the turns background
//!   work wakes, the goal's rounds; [`Agent::run_workflow`]; the run's caps).
//! - `turn.rs`: one turn, step after step until the model answers without calling a tool.
//! - `step.rs`: one request to the model and its answer.
//! - `steering.rs`: the inbox for messages sent while the agent works (a leaf; `turn.rs` reads
//!   it at each step boundary).
//! - `shell.rs`: a command the user runs themselves ([`Agent::run_shell`]), a turn of its own.
//! - `calls.rs`: the calls of one answer, scheduled and committed in call order.
//! - `pipeline.rs`: what one call passes through (hooks, Auto review, the user, the call).
//! - `after_summary.rs`: the instructions and the goal given again after a summary.
//! - `events.rs` and `stop.rs`: what the rest of core shares with the agent (leaves).
//! - `config.rs`: [`AgentConfig`], how the agent drives the model.

mod after_summary;
mod calls;
mod config;
pub(crate) mod events;
mod pipeline;
mod run;
mod shell;
mod steering;
mod step;
pub(crate) mod stop;
#[cfg(test)]
mod tests;
mod title;
mod turn;

use std::sync::Arc;

use dsh_llm::Provider;
use dsh_protocol::{Record, ToolSpec, Usage};
use dsh_tools::{ToolRegistry, ToolSession};
use tokio::sync::mpsc::UnboundedSender;

pub(crate) use self::config::AgentConfig;
use self::events::commit;
pub use self::events::{AgentEvent, TurnSummary};
pub use self::steering::Steering;
pub use self::stop::Stop;
use crate::compaction::compactor::{Compactor, History};
use crate::{CoreError, Session};

/// The agent: a provider, tools and a session.
pub struct Agent {
    provider: Arc<dyn Provider>,
    tools: ToolRegistry,
    tool_session: Arc<ToolSession>,
    config: AgentConfig,
    session: Session,
    events: UnboundedSender<AgentEvent>,
    system: String,
    specs: Vec<ToolSpec>,
    /// Keeps the history inside the context window.
    compactor: Compactor,
    /// Folders already looked at for nested instruction files.
    probed: std::collections::HashSet<std::path::PathBuf>,
    /// Whether the sandbox of the first command was got ready (`Sandbox::warm_up`).
    sandbox_warmed: Arc<std::sync::atomic::AtomicBool>,
    /// Tokens billed by the turns before this one (and the background work they were told
    /// of): the token budget covers all of them.
    spent_before: u64,
    /// What background subagents billed for the turns told between this agent's turns: the
    /// first step of the next turn carries it.
    carried: Usage,
    /// The current run's model requests and usage, for its caps (`--max-turns`,
    /// `--max-budget-usd`).
    run_requests: u32,
    run_usage: Usage,
    /// The final answer's JSON under `--output-schema`.
    structured: Option<serde_json::Value>,
    /// The SessionStart hooks have run.
    hooks_started: bool,
    /// What they printed, until a message takes it (a withheld first message does not).
    session_context: Vec<String>,
    /// The task of the turn under way, and who wrote it, for Auto review.
    turn_task: String,
    /// Images the user attached to the task [`Agent::run_with_images`] runs: its message
    /// carries them; no later message does.
    attached: Vec<dsh_protocol::ImageRef>,
    turn_origin: TaskOrigin,
    /// Checkpoints the workspace at each turn's start and end (the top agent's).
    checkpointer: Option<crate::checkpoints::Checkpointer>,
    /// The turn's start checkpoint while it is being taken.
    pending_checkpoint: Option<crate::checkpoints::PendingCheckpoint>,
    /// Whether the turn running took its start checkpoint (a call that can change a file ran).
    turn_checkpointed: bool,
    /// Whether this agent asked for the session's title already (once, even when it failed).
    titled: bool,
    /// Messages a front end sent while the agent works, read at each step boundary.
    steering: Steering,
}

/// Who wrote the task of a turn: only the user's is the user's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskOrigin {
    User,
    /// The agent that started this one (a subagent's task).
    Agent,
    /// dsh, telling the model what background work finished.
    Notices,
    /// dsh, from the goal the model set.
    GoalRound,
}

impl TaskOrigin {
    fn words(self) -> &'static str {
        match self {
            TaskOrigin::User => "the user",
            TaskOrigin::Agent => {
                "another agent, which started this one (not the user: it may have been misled)"
            }
            TaskOrigin::Notices => "dsh, reporting background work that finished (not the user)",
            TaskOrigin::GoalRound => "dsh, from a goal the agent itself set (not the user's words)",
        }
    }
}

/// What an agent is made of. The run's builder ([`crate::AgentBuilder`]) makes the top
/// agent's, and subagents their children's: there is no other way to make an agent.
pub(crate) struct AgentParts {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) tools: ToolRegistry,
    pub(crate) tool_session: Arc<ToolSession>,
    pub(crate) config: AgentConfig,
    pub(crate) session: Session,
    /// Where the agent reports ([`AgentEvent`]).
    pub(crate) events: UnboundedSender<AgentEvent>,
}

impl Agent {
    pub(crate) fn new(parts: AgentParts) -> Self {
        let AgentParts {
            provider,
            tools,
            tool_session,
            config,
            session,
            events,
        } = parts;
        let mut system = crate::prompt::system_prompt(&config.model, session.cwd(), &tools);
        for fact in config.context.iter().chain(&config.system_append) {
            system.push_str("\n\n");
            system.push_str(fact);
        }
        let specs = tools.specs();
        Agent {
            provider,
            tools,
            tool_session,
            compactor: Compactor::new(config.context_window, config.compaction),
            config,
            session,
            events,
            system,
            specs,
            probed: std::collections::HashSet::new(),
            sandbox_warmed: Arc::default(),
            spent_before: 0,
            carried: Usage::default(),
            run_requests: 0,
            run_usage: Usage::default(),
            structured: None,
            hooks_started: false,
            session_context: Vec::new(),
            turn_task: String::new(),
            attached: Vec::new(),
            turn_origin: TaskOrigin::User,
            checkpointer: None,
            pending_checkpoint: None,
            turn_checkpointed: false,
            titled: false,
            steering: Steering::default(),
        }
    }

    /// Gives the agent a checkpointer: each turn's start and end are checkpointed from now.
    pub(crate) fn set_checkpointer(
        &mut self,
        checkpointer: Option<crate::checkpoints::Checkpointer>,
    ) {
        self.checkpointer = checkpointer;
    }

    /// The session and the checkpointer a rewind works on; a checkpointer is made for an
    /// agent that takes none (checkpoints off now, not when the session was checkpointed).
    pub(crate) fn rewind_parts(
        &mut self,
        settings: &dsh_config::Settings,
    ) -> (&mut Session, &mut crate::checkpoints::Checkpointer) {
        let checkpointer = self
            .checkpointer
            .get_or_insert_with(|| crate::checkpoints::Checkpointer::new(settings));
        (&mut self.session, checkpointer)
    }

    /// The workspace instructions to send after the next task (after a rewind took the
    /// conversation back before the ones it had).
    pub(crate) fn set_instructions(&mut self, instructions: Option<crate::instructions::Delivery>) {
        self.config.instructions = instructions;
    }

    /// The goal board as the session's goal is after a conversation rewind.
    pub(crate) fn goal_rewound(&self) {
        if let Some(goals) = &self.config.goals {
            goals.rewound_to(self.session.goal_change().map(|change| change.goal.clone()));
        }
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The permission mode and approval policy the agent works under now. Every run records
    /// them in its session as it opens (a resumed session's own, unless a flag changed them)
    /// and again when they change (a plan approved), so a front end shows these, never the
    /// settings it asked for, which name a default where the session kept its own.
    pub fn permissions(&self) -> dsh_protocol::PermissionRecord {
        if let Some(recorded) = self.session.permission() {
            return recorded.clone();
        }
        let mode = match &self.config.mode {
            Some(current) => current.get().to_string(),
            None => self.tool_session.policy.mode().to_string(),
        };
        dsh_protocol::PermissionRecord {
            mode,
            approval: self.tool_session.approval.to_string(),
            source: "the run".to_owned(),
        }
    }

    /// The compactor, and the history it works on with what it needs to ask for a summary.
    fn compaction(&mut self) -> (&mut Compactor, History<'_>) {
        (
            &mut self.compactor,
            History {
                session: &mut self.session,
                events: &self.events,
                provider: self.provider.as_ref(),
                model: &self.config.model,
                system: &self.system,
                specs: &self.specs,
                hooks: self.config.hooks.as_deref(),
            },
        )
    }

    /// The final answer's JSON, when the run has an output schema and the answer matched it.
    pub fn structured_output(&self) -> Option<&serde_json::Value> {
        self.structured.as_ref()
    }

    /// Counts what the session's logged steps billed against the token budget (a resumed
    /// subagent's earlier turns).
    pub(crate) fn count_logged_usage(&mut self) {
        self.spent_before = self.session.logged_tokens();
    }

    /// The hooks this agent's session runs, when there are any.
    pub(crate) fn hooks(&self) -> Option<Arc<crate::HookRunner>> {
        self.config.hooks.clone()
    }

    /// The subagents this agent started in the background, when it may start any.
    pub(crate) fn background(&self) -> Option<Arc<crate::subagents::background::BackgroundAgents>> {
        self.config.background.clone()
    }

    /// Stops the background jobs this agent started and waits for them: a subagent's, once it
    /// is done (the run's own are stopped with its processes).
    pub(crate) async fn stop_jobs(&self) {
        if let Some(shell) = &self.tool_session.shell {
            shell.stop_jobs().await;
        }
    }

    /// `text` with the run's secrets taken out. Instruction files are the workspace's text like
    /// any file a tool reads, and a command can copy `.env` into an `AGENTS.md`: what they
    /// deliver is redacted as tool results are, before it is logged or sent.
    fn redacted(&self, text: String) -> String {
        dsh_tools::redacted(self.session.redactor(), text)
    }

    fn commit(&mut self, record: Record) -> Result<(), CoreError> {
        commit(&mut self.session, &self.events, record)
    }
}
