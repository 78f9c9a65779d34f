//! Turns and steps.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use dsh_llm::{Effort, ModelRequest, Provider, StreamDelta};
use dsh_protocol::{
    AbortReason, AssistantMessageRecord, AutoReviewRecord, Block, CheckpointAt, Failure,
    FailureCode, FinishReason, Message, Record, Role, ToolCallRecord, ToolOutputPart,
    ToolResultRecord, ToolSpec, TurnEndReason, Usage,
};
use dsh_tools::{
    ErrorInfo, PreparedCall, ToolContext, ToolEffect, ToolOutcome, ToolRegistry, ToolSession,
};
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::HookEvent;
use crate::auto_review::{AutoReviewer, ReviewContext};
use crate::compaction::{Compactor, History, ManualCompaction};
use crate::goals::{Authority, NextRound};
use crate::plan_approval::{self, PlanDecision};
use crate::{CoreError, Session};

/// How the agent drives the model.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub model: String,
    pub effort: Effort,
    /// A turn that has not answered after this many steps ends with `MAX_STEPS`.
    pub max_steps: u32,
    pub max_output_tokens: Option<u32>,
    /// The most parallel-safe calls in flight at once.
    pub max_parallel_tools: usize,
    /// How long, after the model's answer, to wait for background jobs to finish so it can
    /// answer again with their results.
    pub job_wait: Duration,
    /// Facts about the run the model should know (the sandbox, the approval policy), appended
    /// to the system prompt: they hold for the whole run, so the prompt stays one cacheable
    /// prefix.
    pub context: Vec<String>,
    /// The model's context window in tokens; compaction keeps the history inside it.
    pub context_window: u64,
    /// Workspace instructions (AGENTS.md), sent once after the next task.
    pub instructions: Option<crate::instructions::Delivery>,
    /// How instruction files below the working directory are found as the file tools reach
    /// them; `None` looks for none.
    pub nested_instructions: Option<dsh_config::project::InstructionSettings>,
    /// The most tokens the agent may bill, over all its turns, before its turn is ended (a
    /// subagent's budget); `None`: no limit.
    pub token_budget: Option<u64>,
    /// Kept current with the history of the completed turns, at each turn's start, for tools
    /// that build on it (`subagent_fork`).
    pub completed_history: Option<Arc<std::sync::Mutex<Vec<Message>>>>,
    /// The user's hooks (`hooks.json`), with what they run with.
    pub hooks: Option<Arc<crate::HookRunner>>,
    /// What the final answer must be (`--output-schema`).
    pub output_schema: Option<Arc<crate::OutputSchema>>,
    /// The user's own text, at the very end of the system prompt (`--system-prompt-append`).
    pub system_append: Option<String>,
    /// The most model requests one run (a task and the turns its background work wakes) may
    /// make (`--max-turns`).
    pub max_requests: Option<u32>,
    /// The most one run may cost, in US dollars at the model's prices (`--max-budget-usd`):
    /// its requests come back priced by the provider.
    pub budget: Option<f64>,
    /// The subagents this agent started in the background: their ended turns are told to the
    /// model like finished jobs, and the run waits for them like for jobs.
    pub(crate) background: Option<Arc<crate::subagents::BackgroundAgents>>,
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
}

impl AgentConfig {
    /// Turns that finished jobs may open after the model's answer, in a row.
    pub const MAX_WAKES: u32 = 3;

    pub fn new(model: impl Into<String>) -> Self {
        AgentConfig {
            model: model.into(),
            effort: Effort::default(),
            max_steps: dsh_config::DEFAULT_MAX_STEPS,
            max_output_tokens: None,
            max_parallel_tools: 10,
            job_wait: dsh_config::DEFAULT_JOB_WAIT,
            context: Vec::new(),
            context_window: dsh_config::DEFAULT_CONTEXT_WINDOW,
            instructions: None,
            nested_instructions: None,
            token_budget: None,
            completed_history: None,
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
        }
    }
}

/// How many times a turn's Stop hooks may send the model back to work.
pub const MAX_STOP_BLOCKS: u32 = 3;

/// What the agent reports while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// A record, already in the session log.
    Record(Record),
    /// A live piece of an answer still streaming; not stored.
    Delta(StreamDelta),
    /// A line for the user from outside the conversation (a hook that failed), not stored.
    Notice(String),
    /// New output of a call still running (a command's stdout or stderr as it arrives), for
    /// a front end that shows it live; not stored (the result has it).
    ToolOutput { call_id: String, text: String },
    /// An event of a subagent's run (in its own log), tagged with its id.
    Child {
        agent_id: String,
        event: Box<AgentEvent>,
    },
}

/// How a turn went.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSummary {
    pub turn: u32,
    pub reason: TurnEndReason,
    /// The text of the turn's last assistant message that had any.
    pub text: String,
    /// Every request of the turn.
    pub usage: Usage,
    /// The steps this agent ended (its `StepEnd` records), in every turn the summary covers;
    /// its subagents' steps are in their own logs.
    pub steps: u32,
}

impl TurnSummary {
    /// The summary of a run that went on with `next` (a wake, a goal round): its usage and
    /// steps added, and how it ended and what it answered taken from `next` (the last
    /// answer with text stands).
    fn went_on_with(&mut self, next: TurnSummary) {
        self.usage.add(&next.usage);
        self.steps += next.steps;
        if !next.text.is_empty() {
            self.text = next.text;
        }
        self.turn = next.turn;
        self.reason = next.reason;
    }
}

/// A request to stop the run, with its reason. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    token: CancellationToken,
    reason: Arc<OnceLock<AbortReason>>,
    /// Set when the run's time ran out (`--timeout`): the turn ends as `timeout`.
    expired: Arc<OnceLock<String>>,
    /// For one turn's stop ([`Stop::for_turn`]): the run's reason, when the run was stopped.
    run_reason: Option<Arc<OnceLock<AbortReason>>>,
}

impl Stop {
    pub fn new() -> Self {
        Self::default()
    }

    /// A stop for a subagent: requested on its own, or whenever the parent's `token` is.
    pub(crate) fn child_of(token: &CancellationToken) -> Self {
        let stop = Stop {
            token: token.child_token(),
            reason: Arc::default(),
            expired: Arc::default(),
            run_reason: None,
        };
        if token.is_cancelled() {
            let _ = stop.reason.set(AbortReason::Parent);
        }
        stop
    }

    /// A stop for one turn of this run (a message of a `--input-format stream-json` run): it
    /// can be requested alone, and it is requested, with the run's reason, when the run is.
    pub fn for_turn(&self) -> Stop {
        Stop {
            token: self.token.child_token(),
            reason: Arc::default(),
            expired: self.expired.clone(),
            run_reason: Some(self.reason.clone()),
        }
    }

    /// Asks the run to stop; the first reason given is kept.
    pub fn request(&self, reason: AbortReason) {
        let _ = self.reason.set(reason);
        self.token.cancel();
    }

    pub fn is_requested(&self) -> bool {
        self.token.is_cancelled()
    }

    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Why the run's time ran out, once it has.
    pub fn expired(&self) -> Option<&str> {
        self.expired.get().map(String::as_str)
    }

    /// Stops the run because its time ran out; `message` says which limit.
    pub fn expire(&self, message: String) {
        let _ = self.expired.set(message);
        self.token.cancel();
    }

    fn turn_end(&self) -> TurnEndReason {
        if let Some(message) = self.expired.get() {
            return TurnEndReason::Timeout {
                message: message.clone(),
            };
        }
        // Cancelled with no reason of its own: the run's, or a subagent's parent stopped.
        let reason = (self.reason.get().cloned())
            .or_else(|| self.run_reason.as_ref().and_then(|r| r.get().cloned()))
            .unwrap_or(AbortReason::Parent);
        TurnEndReason::Aborted { reason }
    }
}

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

/// How long, at the end of a run, background subagents have to end their turns once stopped.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// What a step's calls did beyond their results.
struct ToolsRun {
    /// How the turn ends, with its answer, when a call's effect ended it.
    ending: Option<(TurnEndReason, String)>,
    /// What the calls billed.
    usage: Usage,
}

/// The end of one step.
struct StepOutcome {
    usage: Usage,
    text: String,
    end: Option<TurnEndReason>,
}

impl Agent {
    pub fn new(
        provider: Arc<dyn Provider>,
        tools: ToolRegistry,
        tool_session: Arc<ToolSession>,
        config: AgentConfig,
        session: Session,
        events: UnboundedSender<AgentEvent>,
    ) -> Self {
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
            compactor: Compactor::new(config.context_window),
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

    /// Starts a turn: its number, its `turn/start`, and the checkpoint of its start, taken
    /// while the turn's first request goes out (the walk of a large tree costs the model's
    /// time, not the user's) and settled before any call runs.
    async fn start_turn(&mut self) -> Result<u32, CoreError> {
        let turn = self.session.next_turn();
        self.commit(Record::TurnStart { turn })?;
        if let Some(checkpointer) = &self.checkpointer {
            self.pending_checkpoint = Some(checkpointer.begin(turn, CheckpointAt::Start, None));
        }
        Ok(turn)
    }

    /// Commits the checkpoint started at the turn's start, once it is taken.
    async fn settle_checkpoint(&mut self) -> Result<(), CoreError> {
        let (Some(pending), Some(checkpointer)) =
            (self.pending_checkpoint.take(), self.checkpointer.as_mut())
        else {
            return Ok(());
        };
        let taken = checkpointer.finish(pending).await;
        self.checkpointed(taken)
    }

    /// Checkpoints the workspace, when the agent takes checkpoints.
    async fn checkpoint(
        &mut self,
        turn: u32,
        at: CheckpointAt,
        call_id: Option<String>,
    ) -> Result<(), CoreError> {
        self.settle_checkpoint().await?;
        let Some(checkpointer) = self.checkpointer.as_mut() else {
            return Ok(());
        };
        let taken = checkpointer.take(turn, at, call_id).await;
        self.checkpointed(taken)
    }

    /// A checkpoint taken is committed; one that could not be taken does not stop the turn:
    /// the user is told that this point cannot be rewound to.
    fn checkpointed(&mut self, taken: Result<Record, String>) -> Result<(), CoreError> {
        match taken {
            Ok(record) => self.commit(record),
            Err(why) => {
                let _ = self.events.send(AgentEvent::Notice(format!(
                    "dsh: the workspace could not be checkpointed, so a rewind cannot go back \
                     to this point: {why}"
                )));
                Ok(())
            }
        }
    }

    pub fn session(&self) -> &Session {
        &self.session
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
            },
        )
    }

    /// Runs the task: one turn, then, while background jobs still run, waits (up to
    /// `job_wait` in all) for them to finish and gives the model their notices in a new turn,
    /// at most [`AgentConfig::MAX_WAKES`] times. The summary covers every turn: the last
    /// reason, the last text, all usage.
    ///
    /// Boxed so that it is compiled once, here, and not in every front end that awaits it.
    pub fn run<'a>(
        &'a mut self,
        task: String,
        stop: &'a Stop,
    ) -> BoxFuture<'a, Result<TurnSummary, CoreError>> {
        Box::pin(self.run_task(task, stop))
    }

    async fn run_task(&mut self, task: String, stop: &Stop) -> Result<TurnSummary, CoreError> {
        self.run_requests = 0;
        self.run_usage = Usage::default();
        self.structured = None;
        let task = match self.prompt_hooks(task, stop).await {
            Ok(task) => task,
            Err(why) => return self.withheld(why).await,
        };
        if let Some(background) = &self.config.background {
            background.open();
        }
        let outcome = match self.run_and_wake(task, Authority::Human, stop).await {
            Ok(summary) => self.goal_rounds(summary, stop).await,
            Err(error) => Err(error),
        };
        // Background subagents still at work are stopped with the run, however it ends; what
        // they billed counts.
        let Some(background) = self.config.background.clone() else {
            return outcome;
        };
        background.stop_all(STOP_WAIT).await;
        let mut summary = outcome?;
        let (_, usage) = self.take_notices(summary.turn)?;
        summary.usage.add(&usage);
        Ok(summary)
    }

    /// [`Agent::run`] for a task with images attached (already in the attachment store), for a
    /// model that takes images: the front end checks that it does, and says so when not.
    pub async fn run_with_images(
        &mut self,
        task: String,
        images: Vec<dsh_protocol::ImageRef>,
        stop: &Stop,
    ) -> Result<TurnSummary, CoreError> {
        self.attached = images;
        let summary = self.run(task, stop).await;
        // A hook may have withheld the message: its images go with it.
        self.attached.clear();
        summary
    }

    /// The turns of [`Agent::run`] and of each goal round: the task's (made with `authority`
    /// over the goal), then one per wake.
    async fn run_and_wake(
        &mut self,
        task: String,
        authority: Authority,
        stop: &Stop,
    ) -> Result<TurnSummary, CoreError> {
        self.turn_origin = match authority {
            Authority::Round(_) => TaskOrigin::GoalRound,
            _ if self.config.delegated => TaskOrigin::Agent,
            _ => TaskOrigin::User,
        };
        self.set_goal_authority(authority);
        let mut summary = self.run_turn(task, stop).await?;
        // What background work wakes is no one's request.
        self.set_goal_authority(Authority::Neither);
        let deadline = tokio::time::Instant::now() + self.config.job_wait;
        let mut wakes = 0;
        // A run at one of its caps ends with the answer it has, without waiting for
        // background work to wake it.
        while summary.reason.is_completed()
            && wakes < AgentConfig::MAX_WAKES
            && self.run_cap().is_none()
        {
            let mut notices = self.take_notices(summary.turn)?;
            if notices.0.is_empty() {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                let waited = tokio::select! {
                    () = stop.token().cancelled() => false,
                    waited = self.wait_for_background(left) => waited,
                };
                if !waited || left.is_zero() {
                    break;
                }
                notices = self.take_notices(summary.turn)?;
                if notices.0.is_empty() {
                    continue;
                }
            }
            wakes += 1;
            self.turn_origin = TaskOrigin::Notices;
            self.carried.add(&notices.1);
            let next = self.run_turn(notices.0.join("\n"), stop).await?;
            summary.went_on_with(next);
        }
        Ok(summary)
    }

    /// The goal's rounds, after the run's first turn: while the goal is active and armed and
    /// the last turn completed, one more turn with the round's prompt. The summary covers them
    /// all. A round the user stopped pauses the goal; any other turn that did not complete
    /// disarms it (the human decides what comes next).
    async fn goal_rounds(
        &mut self,
        mut summary: TurnSummary,
        stop: &Stop,
    ) -> Result<TurnSummary, CoreError> {
        let Some(goals) = self.config.goals.clone() else {
            return Ok(summary);
        };
        let mut in_round = false;
        loop {
            if !summary.reason.is_completed() {
                // The user stopped a round (a run cap such as --timeout only ends the run).
                if in_round && stop.is_requested() && stop.expired().is_none() {
                    if let Some(pause) = goals.pause_stopped_round(summary.turn) {
                        self.commit(Record::GoalChange(pause))?;
                    }
                } else {
                    goals.disarm();
                }
                break;
            }
            if stop.is_requested() || self.run_cap().is_some() {
                break;
            }
            match goals.next_round(self.session.last_turn() + 1) {
                NextRound::None => break,
                NextRound::Exhausted(change) => {
                    self.commit(Record::GoalChange(change))?;
                    break;
                }
                NextRound::Start { change, prompt } => {
                    let round = change.goal.rounds_started;
                    self.commit(Record::GoalChange(change))?;
                    in_round = true;
                    let next = self
                        .run_and_wake(prompt, Authority::Round(round), stop)
                        .await?;
                    summary.went_on_with(next);
                }
            }
        }
        Ok(summary)
    }

    fn set_goal_authority(&self, authority: Authority) {
        if let Some(goals) = &self.config.goals {
            goals.set_authority(authority);
        }
    }

    /// Runs a saved workflow the user asked for by name (`dsh workflow NAME`), without the
    /// model: a turn whose message says what was asked, the `workflow` tool run on the file's
    /// script as one step (what its agents billed is the step's), and its result, or why it
    /// failed, as the turn's answer. The result also goes into the history as a message, so a
    /// later turn of the session knows what the workflow found.
    ///
    /// Boxed so that it is compiled once, here, and not in every front end that awaits it.
    pub fn run_workflow<'a>(
        &'a mut self,
        saved: &'a crate::SavedWorkflow,
        args: Option<serde_json::Value>,
        stop: &'a Stop,
    ) -> BoxFuture<'a, Result<TurnSummary, CoreError>> {
        Box::pin(self.workflow_turn(saved, args, stop))
    }

    async fn workflow_turn(
        &mut self,
        saved: &crate::SavedWorkflow,
        args: Option<serde_json::Value>,
        stop: &Stop,
    ) -> Result<TurnSummary, CoreError> {
        self.run_requests = 0;
        self.run_usage = Usage::default();
        self.structured = None;
        let turn = self.start_turn().await?;
        // The workflow's agents change files from the start: no request to hide it behind.
        self.settle_checkpoint().await?;
        let asked = match &args {
            Some(args) => format!("/workflow {} {args}", saved.name),
            None => format!("/workflow {}", saved.name),
        };
        self.commit(Record::UserMessage {
            turn,
            message: Message::user_text(asked),
            instructions: None,
        })?;
        self.commit(Record::StepStart { turn, step: 1 })?;
        let mut arguments = serde_json::json!({
            "script": saved.script,
            "meta": {"name": saved.name, "description": saved.description},
        });
        if let Some(args) = args {
            arguments["args"] = args;
        }
        let ctx = ToolContext {
            call_id: format!("workflow-{turn}"),
            cwd: self.session.cwd().to_path_buf(),
            cancel: stop.token().clone(),
            session: self.tool_session.clone(),
        };
        let mut outcome = self
            .tools
            .prepare("workflow", &arguments.to_string())
            .run(&ctx)
            .await;
        if let Some(ToolEffect::Subagents(runs)) = outcome.effect.take() {
            for mut run in runs {
                run.turn = turn;
                self.commit(Record::SubagentRun(Box::new(run)))?;
            }
        }
        let usage = outcome.usage;
        self.run_usage.add(&usage);
        self.commit(Record::StepEnd {
            turn,
            step: 1,
            usage,
        })?;
        let text = self.redacted(outcome.text());
        self.commit(Record::UserMessage {
            turn,
            message: Message::user_text(format!(
                "The saved workflow {} ran ({}):\n{text}",
                saved.name,
                saved.path.display()
            )),
            instructions: None,
        })?;
        let reason = if stop.is_requested() {
            stop.turn_end()
        } else if outcome.is_error {
            TurnEndReason::Error {
                error: Failure::new(FailureCode::Workflow, text.clone()),
            }
        } else {
            TurnEndReason::Completed
        };
        self.end_turn(TurnSummary {
            turn,
            reason,
            text,
            usage,
            steps: 1,
        })
        .await
    }

    /// The SessionStart hooks (the first run only) and the UserPromptSubmit hooks: what they
    /// print is added to the message; `Err` says why a hook withheld it.
    async fn prompt_hooks(&mut self, mut task: String, stop: &Stop) -> Result<String, String> {
        let Some(hooks) = self.config.hooks.clone() else {
            return Ok(task);
        };
        if !self.hooks_started {
            self.hooks_started = true;
            let source = if self.session.last_turn() > 0 {
                "resume"
            } else {
                "startup"
            };
            // Its matcher chooses among sources, as Claude Code's does.
            let verdict = hooks
                .fire(
                    HookEvent::SessionStart,
                    Some(&[source]),
                    serde_json::json!({"source": source}),
                    stop.token(),
                )
                .await;
            self.session_context.extend(verdict.context);
        }
        let verdict = hooks
            .fire(
                HookEvent::UserPromptSubmit,
                None,
                serde_json::json!({"prompt": task}),
                stop.token(),
            )
            .await;
        if let Some(why) = verdict.blocked {
            return Err(why);
        }
        let context = std::mem::take(&mut self.session_context);
        for block in context.into_iter().chain(verdict.context) {
            task.push_str("\n\n");
            task.push_str(&block);
        }
        Ok(task)
    }

    /// A turn whose message a hook withheld: it starts and ends, and nothing is sent.
    async fn withheld(&mut self, why: String) -> Result<TurnSummary, CoreError> {
        let turn = self.start_turn().await?;
        let reason = TurnEndReason::Error {
            error: Failure::new(
                FailureCode::HookBlocked,
                format!("a UserPromptSubmit hook withheld the message: {why}"),
            ),
        };
        self.end_turn(TurnSummary {
            turn,
            reason,
            text: String::new(),
            usage: Usage::default(),
            steps: 0,
        })
        .await
    }

    /// The Stop hooks, when the model has answered: `Some` is a hook's reason to go on, the
    /// next message to the model, at most [`MAX_STOP_BLOCKS`] times a turn.
    async fn stop_hooks(&self, blocks: &mut u32, stop: &Stop) -> Option<String> {
        let hooks = self.config.hooks.as_ref()?;
        if *blocks >= MAX_STOP_BLOCKS {
            return None;
        }
        let verdict = hooks
            .fire(
                HookEvent::Stop,
                None,
                serde_json::json!({"stop_hook_active": *blocks > 0}),
                stop.token(),
            )
            .await;
        let why = verdict.blocked?;
        *blocks += 1;
        Some(why)
    }

    /// With `--output-schema`, a completed turn's answer must be valid JSON for it: a valid
    /// one is kept ([`Agent::structured_output`]) and the turn ends; an invalid one is sent
    /// back with what failed (`None`: go on), [`OUTPUT_RETRIES`] times, then the turn ends
    /// as `output-schema`.
    fn check_output(
        &mut self,
        end: &TurnEndReason,
        text: &str,
        turn: u32,
        corrections: &mut u32,
    ) -> Result<Option<TurnEndReason>, CoreError> {
        let Some(schema) = self.config.output_schema.clone() else {
            return Ok(Some(end.clone()));
        };
        if !end.is_completed() {
            return Ok(Some(end.clone()));
        }
        match schema.check(text) {
            Ok(value) => {
                self.structured = Some(value);
                Ok(Some(end.clone()))
            }
            Err(problem) if *corrections < crate::OUTPUT_RETRIES => {
                *corrections += 1;
                self.commit(Record::UserMessage {
                    turn,
                    message: Message::user_text(schema.correction(&problem)),
                    instructions: None,
                })?;
                Ok(None)
            }
            Err(problem) => Ok(Some(TurnEndReason::OutputSchema {
                message: format!(
                    "the final answer still did not match --output-schema after {} \
                     corrections: {problem}",
                    crate::OUTPUT_RETRIES
                ),
            })),
        }
    }

    /// The final answer's JSON, when the run has an output schema and the answer matched it.
    pub fn structured_output(&self) -> Option<&serde_json::Value> {
        self.structured.as_ref()
    }

    /// The run's cap it has reached, if any: checked before each request, so a run stops
    /// with its last answer committed and never sends one the cap does not allow.
    fn run_cap(&self) -> Option<TurnEndReason> {
        self.run_cap_with(0, &Usage::default())
    }

    /// [`Agent::run_cap`], counting `requests` and `usage` not yet in the run's totals (what
    /// the step under way has spent so far).
    fn run_cap_with(&self, requests: u32, usage: &Usage) -> Option<TurnEndReason> {
        if let Some(max) = self.config.max_requests
            && self.run_requests + requests >= max
        {
            return Some(TurnEndReason::MaxTurns {
                message: format!(
                    "the run made the {max} model requests --max-turns allows without a final \
                     answer"
                ),
            });
        }
        if let Some(limit) = &self.config.budget {
            let mut total = self.run_usage;
            total.add(usage);
            let spent = total.cost_usd.unwrap_or(0.0);
            if spent >= *limit {
                return Some(TurnEndReason::MaxBudget {
                    message: format!(
                        "the run spent ${spent:.4} of the ${limit} --max-budget-usd allows \
                         without a final answer"
                    ),
                });
            }
        }
        None
    }

    /// Compacts the history now, between turns (the terminal UI's `/compact`): long tool
    /// results are cut, and all but the last exchange is summarised in one request, when it
    /// is long enough to be worth one (a short history sends nothing). Returns what was done
    /// and what the summary request billed (also in the log's `compaction/summary` record).
    ///
    /// Boxed so that it is compiled once, here, and not in every front end that awaits it.
    pub fn compact<'a>(
        &'a mut self,
        stop: &'a Stop,
    ) -> BoxFuture<'a, Result<(ManualCompaction, Usage), CoreError>> {
        Box::pin(self.compact_between_turns(stop))
    }

    async fn compact_between_turns(
        &mut self,
        stop: &Stop,
    ) -> Result<(ManualCompaction, Usage), CoreError> {
        let turn = self.session.last_turn();
        let (compactor, history) = self.compaction();
        compactor.compact_now(history, turn, stop).await
    }

    /// Counts what the session's logged steps billed against the token budget (a resumed
    /// subagent's earlier turns).
    pub(crate) fn count_logged_usage(&mut self) {
        self.spent_before = self.session.logged_tokens();
    }

    /// The subagents this agent started in the background, when it may start any.
    pub(crate) fn background(&self) -> Option<Arc<crate::subagents::BackgroundAgents>> {
        self.config.background.clone()
    }

    /// Stops the background jobs this agent started and waits for them: a subagent's, once it
    /// is done (the run's own are stopped with its processes).
    pub(crate) async fn stop_jobs(&self) {
        if let Some(shell) = &self.tool_session.shell {
            shell.stop_jobs().await;
        }
    }

    /// Waits until a background job or subagent ends, or `limit` passes; false when none runs.
    async fn wait_for_background(&self, limit: Duration) -> bool {
        let jobs = self
            .tool_session
            .shell
            .as_ref()
            .filter(|s| s.jobs.running() > 0);
        let agents = (self.config.background.as_ref())
            .filter(|agents| agents.any_running() || agents.has_news());
        if jobs.is_none() && agents.is_none() {
            return false;
        }
        // Only a source with work is listened to: one with none would answer at once and end
        // the wait for the other. Work that ended since the look above answers at once too,
        // and its notice is then waiting.
        let jobs_end = async {
            match jobs {
                Some(shell) => _ = shell.jobs.wait_any(limit).await,
                None => std::future::pending().await,
            }
        };
        let agents_end = async {
            match agents {
                Some(agents) => _ = agents.wait_any(limit).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = jobs_end => {}
            () = agents_end => {}
        }
        true
    }

    /// The notices of finished background work not told yet (jobs, and subagents' ended turns,
    /// whose links are recorded now), and what those subagents billed.
    fn take_notices(&mut self, turn: u32) -> Result<(Vec<String>, Usage), CoreError> {
        let mut notices = match &self.tool_session.shell {
            Some(shell) => shell.jobs.take_notices(),
            None => Vec::new(),
        };
        let mut usage = Usage::default();
        if let Some(background) = &self.config.background {
            let settled = background.take();
            usage = crate::subagents::usage_of(&settled);
            for settled in settled {
                let mut record = settled.record;
                record.turn = turn;
                self.commit(Record::SubagentRun(Box::new(record)))?;
                notices.push(settled.text);
            }
        }
        Ok((notices, usage))
    }

    /// Runs one turn for `task` until the model answers without calling a tool, the step cap
    /// is reached, a request fails for good, or `stop` is requested. Reached only through
    /// [`Agent::run`], whose boxing keeps it compiled once.
    async fn run_turn(&mut self, task: String, stop: &Stop) -> Result<TurnSummary, CoreError> {
        if let Some(shared) = &self.config.completed_history {
            *shared
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                self.session.completed_history().to_vec();
        }
        // The answer's JSON is the last turn's: a wake turn that ends otherwise has none.
        self.structured = None;
        let turn = self.start_turn().await?;
        // For Auto review, on now or after a plan's approval.
        if self.config.reviewer.is_some() || self.config.standby_reviewer.is_some() {
            self.turn_task.clone_from(&task);
        }
        let images = std::mem::take(&mut self.attached);
        self.commit(Record::UserMessage {
            turn,
            message: Message::user_with_images(task, images),
            instructions: None,
        })?;
        if let Some(delivery) = self.config.instructions.take() {
            self.commit(Record::UserMessage {
                turn,
                message: Message::user_text(self.redacted(delivery.text)),
                instructions: Some(delivery.files),
            })?;
        }
        let mut usage = Usage::default();
        let mut text = String::new();
        let mut step = 0;
        let mut corrections = 0;
        let mut stop_blocks = 0;
        let reason = loop {
            if stop.is_requested() {
                break stop.turn_end();
            }
            if step >= self.config.max_steps {
                break TurnEndReason::Error {
                    error: Failure::new(
                        FailureCode::MaxSteps,
                        format!(
                            "the turn reached its limit of {} steps without a final answer; \
                             raise it with --max-steps",
                            self.config.max_steps
                        ),
                    ),
                };
            }
            if let Some(end) = self.run_cap() {
                break end;
            }
            if let Some(budget) = self.config.token_budget
                && self.spent_before + usage.total_tokens >= budget
            {
                break TurnEndReason::Error {
                    error: Failure::new(
                        FailureCode::TokenBudget,
                        format!(
                            "the agent spent its budget of {budget} tokens \
                             (subagents.max_tokens) before a final answer"
                        ),
                    ),
                };
            }
            let noticed = if step > 0 {
                self.deliver_notices(turn)?
            } else {
                std::mem::take(&mut self.carried)
            };
            step += 1;
            self.commit(Record::StepStart { turn, step })?;
            let (compactor, history) = self.compaction();
            let mut spent = compactor.compact(history, turn, "threshold", stop).await?;
            // What background subagents billed for the turns told now is this step's.
            spent.add(&noticed);
            // A compaction summary may have spent what the budget had left.
            let mut outcome = self.capped_step(turn, step, &spent, stop).await?;
            if is_overflow(&outcome) {
                // The provider says the request does not fit: compact as far as possible and
                // try the step once more, if the run's caps allow one more request.
                let (compactor, history) = self.compaction();
                let (changed, cost) = compactor
                    .compact_all(history, turn, "overflow", stop)
                    .await?;
                spent.add(&cost);
                if changed {
                    spent.add(&outcome.usage);
                    outcome = self.capped_step(turn, step, &spent, stop).await?;
                }
            }
            outcome.usage.add(&spent);
            usage.add(&outcome.usage);
            self.run_usage.add(&outcome.usage);
            let step_text = std::mem::take(&mut outcome.text);
            if !step_text.is_empty() {
                text.clone_from(&step_text);
            }
            self.commit(Record::StepEnd {
                turn,
                step,
                usage: outcome.usage,
            })?;
            if let Some(end) = outcome.end {
                match self.check_output(&end, &step_text, turn, &mut corrections)? {
                    Some(end) if end.is_completed() => {
                        if let Some(why) = self.stop_hooks(&mut stop_blocks, stop).await {
                            // The answer the schema accepted is not the last one any more.
                            self.structured = None;
                            self.commit(Record::UserMessage {
                                turn,
                                message: Message::user_text(why),
                                instructions: None,
                            })?;
                            continue;
                        }
                        break end;
                    }
                    Some(end) => break end,
                    // The model is told what is wrong and answers again.
                    None => continue,
                }
            }
        };
        // What woke a turn that ended before its first step is still the turn's.
        usage.add(&std::mem::take(&mut self.carried));
        self.end_turn(TurnSummary {
            turn,
            reason,
            text,
            usage,
            steps: step,
        })
        .await
    }

    /// Ends the turn `summary` describes: its `turn/end` committed, what it spent counted, the
    /// summary handed back with its reason as logged (a provider's message can quote the key
    /// it was sent).
    async fn end_turn(&mut self, mut summary: TurnSummary) -> Result<TurnSummary, CoreError> {
        self.checkpoint(summary.turn, CheckpointAt::End, None)
            .await?;
        self.session.redact_reason(&mut summary.reason);
        self.commit(Record::TurnEnd {
            turn: summary.turn,
            reason: summary.reason.clone(),
        })?;
        self.spent_before += summary.usage.total_tokens;
        Ok(summary)
    }

    /// The step's request, unless the run's caps do not allow one more: then the step ends
    /// with the cap's reason. `spent` is what the step has cost so far.
    async fn capped_step(
        &mut self,
        turn: u32,
        step: u32,
        spent: &Usage,
        stop: &Stop,
    ) -> Result<StepOutcome, CoreError> {
        if let Some(end) = self.run_cap_with(0, spent) {
            return Ok(StepOutcome {
                usage: Usage::default(),
                text: String::new(),
                end: Some(end),
            });
        }
        self.run_requests += 1;
        self.step(turn, step, stop).await
    }

    async fn step(&mut self, turn: u32, step: u32, stop: &Stop) -> Result<StepOutcome, CoreError> {
        // Tools that became ready since the last request (a slow MCP server) join this one.
        if self.tools.take_joins() {
            self.specs = self.tools.specs();
        }
        let sent_len = self.session.history().len();
        let request = ModelRequest {
            model: &self.config.model,
            system: &self.system,
            messages: self.session.history(),
            tools: &self.specs,
            effort: self.config.effort,
            max_output_tokens: self.config.max_output_tokens,
        };
        let events = self.events.clone();
        let redactor = self.session.redactor().cloned();
        // The sandbox of the first command is got ready once the model starts a tool call:
        // not before the first request is on the wire (it would be sent later), not in a run
        // that calls no tool, and while the rest of the call streams rather than in front of
        // the command.
        let warmed = self.sandbox_warmed.clone();
        let mut warm = match &self.tool_session.shell {
            Some(shell) if !warmed.load(std::sync::atomic::Ordering::SeqCst) => {
                Some((shell.sandbox.clone(), self.tool_session.policy.clone()))
            }
            _ => None,
        };
        let mut on_delta = move |mut delta| {
            if matches!(delta, StreamDelta::ToolCall)
                && let Some((sandbox, policy)) = warm.take()
            {
                warmed.store(true, std::sync::atomic::Ordering::SeqCst);
                sandbox.warm_up(policy);
            }
            // A retry's reason is the provider's message, which can quote the key.
            if let (StreamDelta::Retry(notice), Some(redactor)) = (&mut delta, &redactor)
                && let std::borrow::Cow::Owned(redacted) = redactor.redact(&notice.message)
            {
                notice.message = redacted;
            }
            let _ = events.send(AgentEvent::Delta(delta));
        };
        let answer = tokio::select! {
            biased;
            () = stop.token().cancelled() => None,
            answer = self.provider.complete(request, &mut on_delta) => Some(answer),
        };
        let completion = match answer {
            // The request was on the wire: it may be billed, but nobody will say for how much.
            None => {
                return Ok(StepOutcome {
                    usage: Usage::unreported(),
                    text: String::new(),
                    end: Some(stop.turn_end()),
                });
            }
            Some(Err(error)) => {
                return Ok(StepOutcome {
                    usage: error.usage,
                    text: String::new(),
                    end: Some(TurnEndReason::Error {
                        error: error.failure,
                    }),
                });
            }
            Some(Ok(completion)) => completion,
        };
        // The size measurement takes the answering attempt alone; billing takes them all.
        let mut billed = completion.billed();
        self.compactor.measured(&completion.usage, sent_len);
        let text = completion.message.text();
        let calls: Vec<(String, String, String)> = completion
            .message
            .tool_calls()
            .map(|(id, name, args)| (id.to_owned(), name.to_owned(), args.to_owned()))
            .collect();
        self.commit(Record::AssistantMessage(AssistantMessageRecord {
            turn,
            step,
            message: completion.message,
            finish: completion.finish,
            provider: self.provider.name().to_owned(),
            model: self.config.model.clone(),
            usage: billed,
        }))?;
        let end = if calls.is_empty() {
            Some(if completion.finish == FinishReason::MaxTokens {
                TurnEndReason::MaxTokens
            } else {
                TurnEndReason::Completed
            })
        } else {
            let cut_off = completion.finish == FinishReason::MaxTokens;
            let prepared: Vec<PreparedCall> = calls
                .iter()
                .map(|(_, name, arguments)| self.tools.prepare(name, arguments))
                .collect();
            let touched: Vec<String> = prepared
                .iter()
                .filter_map(|call| call.touched_path().map(str::to_owned))
                .collect();
            let ran = self
                .run_tools(turn, step, &calls, prepared, cut_off, stop)
                .await?;
            // What the calls billed themselves (a subagent's requests) is the step's too.
            billed.add(&ran.usage);
            self.deliver_nested_instructions(turn, &touched)?;
            self.deliver_goal_wrap_up(turn)?;
            match ran.ending {
                // A tool ended the turn (a plan submitted with no one to approve it): its text
                // is the answer, unless the run was stopped meanwhile.
                Some((reason, answer)) if !stop.is_requested() => {
                    return Ok(StepOutcome {
                        usage: billed,
                        text: answer,
                        end: Some(reason),
                    });
                }
                // The results go back to the model in the next step, even after a cut-off
                // answer: only a step without tool calls ends the turn.
                _ => stop.is_requested().then(|| stop.turn_end()),
            }
        };
        Ok(StepOutcome {
            usage: billed,
            text,
            end,
        })
    }

    /// Runs the calls of one answer: a run of consecutive parallel-safe calls together (at most
    /// `max_parallel_tools` in flight), any other call alone; results committed in call order,
    /// each followed by what its effect records. Returns how the turn ends when a call's effect
    /// ends it, with the answer.
    async fn run_tools(
        &mut self,
        turn: u32,
        step: u32,
        calls: &[(String, String, String)],
        prepared: Vec<PreparedCall>,
        cut_off: bool,
        stop: &Stop,
    ) -> Result<ToolsRun, CoreError> {
        // The turn's start checkpoint is in before any call can change a file.
        self.settle_checkpoint().await?;
        let mut ending = None;
        let mut plan_answered = false;
        let mut usage = Usage::default();
        let mut ctx = ToolContext {
            call_id: String::new(),
            cwd: self.session.cwd().to_path_buf(),
            cancel: stop.token().clone(),
            session: self.tool_session.clone(),
        };
        let mut prepared = prepared.into_iter().peekable();
        let mut next = 0;
        while let Some(call) = prepared.next() {
            if ending.is_some() || plan_answered {
                // A call ended the turn (a submitted plan), or the user answered a plan: the
                // calls after it are not run (the model reads the answer first).
                let why = if ending.is_some() {
                    "tool call not run: an earlier call of this answer ended the turn"
                } else {
                    "tool call not run: an earlier call of this answer submitted a plan, which \
                     the user has answered; read the answer, then make the call again if it is \
                     still needed"
                };
                for (id, name, arguments) in &calls[next..] {
                    self.commit_call(turn, step, id, name, arguments)?;
                    let outcome = ToolOutcome::failure(dsh_tools::ToolError::coded(
                        "AbortError",
                        "ABORTED_BEFORE_DISPATCH",
                        why,
                    ));
                    self.commit_result(turn, step, id, outcome)?;
                }
                return Ok(ToolsRun { ending, usage });
            }
            if stop.is_requested() {
                for (id, name, arguments) in &calls[next..] {
                    self.commit_call(turn, step, id, name, arguments)?;
                    let outcome = ToolOutcome::failure(dsh_tools::ToolError::coded(
                        "AbortError",
                        "ABORTED_BEFORE_DISPATCH",
                        "tool call aborted before dispatch",
                    ));
                    self.commit_result(turn, step, id, outcome)?;
                }
                return Ok(ToolsRun { ending, usage });
            }
            let (id, name, arguments) = &calls[next];
            if cut_off && !call.arguments_are_json() {
                self.commit_call(turn, step, id, name, arguments)?;
                self.commit_result(turn, step, id, cut_off_outcome())?;
                next += 1;
                continue;
            }
            let mut group = vec![call];
            if group[0].parallel_safe() {
                while let Some(more) = prepared.next_if(PreparedCall::parallel_safe) {
                    group.push(more);
                }
            }
            let group_end = next + group.len();
            // A call that asks to run outside the sandbox may change what the sandbox kept:
            // the files as they are just before it can be gone back to.
            for ((id, _, _), call) in calls[next..group_end].iter().zip(&group) {
                if call.asks_escalation() {
                    self.checkpoint(turn, CheckpointAt::BeforeEscalation, Some(id.clone()))
                        .await?;
                }
            }
            // The whole group is recorded as started before it runs: its calls are read-only,
            // so a crash in between costs nothing but a re-run.
            for (id, name, arguments) in &calls[next..group_end] {
                self.commit_call(turn, step, id, name, arguments)?;
            }
            // Each call with a context of its own, owned: the futures borrow nothing, so a run
            // can be spawned as a task (a subagent's is).
            let runs: Vec<(ToolContext, PreparedCall, String, String)> = calls[next..group_end]
                .iter()
                .zip(group)
                .map(|((id, name, arguments), call)| {
                    let ctx = ToolContext {
                        call_id: id.clone(),
                        ..ctx.clone()
                    };
                    (ctx, call, name.clone(), arguments.clone())
                })
                .collect();
            let hooks = self.config.hooks.clone();
            // What the reviewer reads is gathered only for a group that has a call to review.
            let review = runs
                .iter()
                .any(|(_, call, _, _)| call.auto_reviewed())
                .then(|| self.review_context())
                .flatten();
            let mut outcomes = futures_util::stream::iter(runs)
                .map(|(ctx, call, name, arguments)| {
                    let hooks = hooks.clone();
                    let review = review.clone();
                    async move {
                        run_gated(hooks.as_deref(), review, call, &ctx, &name, &arguments).await
                    }
                })
                .buffered(self.config.max_parallel_tools.max(1));
            let mut position = next;
            while let Some((mut outcome, reviewed)) = outcomes.next().await {
                let id = &calls[position].0;
                usage.add(&outcome.usage);
                // The review before the result: a run killed between them still accounts for
                // what the review billed.
                if let Some(mut review) = reviewed {
                    review.turn = turn;
                    self.commit(Record::AutoReview(review))?;
                }
                // The list first, as the reference records it: a run killed between the two
                // keeps the list the call made.
                match outcome.effect.take() {
                    Some(ToolEffect::Todos(todos)) => {
                        commit(
                            &mut self.session,
                            &self.events,
                            Record::TodoWrite { turn, todos },
                        )?;
                    }
                    // A submitted plan is put to the user, if there is one to ask: approved
                    // or sent back, the turn goes on.
                    Some(ToolEffect::EndTurn {
                        reason: TurnEndReason::PlanSubmitted,
                        text,
                    }) if ending.is_none() => {
                        let decision = self.put_plan_to_user(id, stop).await;
                        if decision != PlanDecision::Undecided
                            || self.tool_session.questions.is_some()
                        {
                            outcome.parts = vec![ToolOutputPart::Text {
                                text: plan_approval::result_text(&decision),
                            }];
                        }
                        match decision {
                            PlanDecision::Undecided => {
                                ending = Some((TurnEndReason::PlanSubmitted, text));
                            }
                            PlanDecision::Approved(mode) => {
                                self.switch_mode(mode)?;
                                ctx.session = self.tool_session.clone();
                                plan_answered = true;
                            }
                            PlanDecision::KeepPlanning(_) => plan_answered = true,
                        }
                    }
                    // The first call that ends the turn decides how.
                    Some(ToolEffect::EndTurn { reason, text }) => {
                        ending.get_or_insert((reason, text));
                    }
                    Some(ToolEffect::Present(mut shown)) => {
                        shown.turn = turn;
                        commit(&mut self.session, &self.events, Record::Presentation(shown))?;
                    }
                    Some(ToolEffect::Goal(mut change)) => {
                        change.turn = turn;
                        commit(&mut self.session, &self.events, Record::GoalChange(change))?;
                    }
                    Some(ToolEffect::Subagents(runs)) => {
                        for mut run in runs {
                            run.turn = turn;
                            commit(
                                &mut self.session,
                                &self.events,
                                Record::SubagentRun(Box::new(run)),
                            )?;
                        }
                    }
                    None => {}
                }
                commit(
                    &mut self.session,
                    &self.events,
                    result_record(turn, step, id, outcome),
                )?;
                position += 1;
            }
            next = group_end;
        }
        Ok(ToolsRun { ending, usage })
    }

    /// The user's decision on a plan submitted in plan mode; `Undecided` with nobody to ask
    /// (headless: the plan is the turn's answer) or once the run is stopped.
    async fn put_plan_to_user(&self, call_id: &str, stop: &Stop) -> PlanDecision {
        let Some(questions) = self.tool_session.questions.clone() else {
            return PlanDecision::Undecided;
        };
        let auto_review = self.config.standby_reviewer.is_some();
        let question = plan_approval::question(auto_review);
        let outcome = tokio::select! {
            biased;
            () = stop.token().cancelled() => return PlanDecision::Undecided,
            outcome = questions.ask(call_id, vec![question]) => outcome,
        };
        plan_approval::decision(outcome, auto_review)
    }

    /// Leaves plan mode for `mode`, the user's pick for carrying out the plan: the tools work
    /// under its sandbox from the next call on, subagents started from now on too, and the
    /// session records it so that a resume keeps it. The approval policy becomes the mode's
    /// default (plan mode's is `never`, having nothing wider to ask for).
    fn switch_mode(&mut self, mode: dsh_config::PermissionMode) -> Result<(), CoreError> {
        use dsh_sandbox::escalation::ApprovalPolicy;
        let approval = if mode.is_auto() {
            ApprovalPolicy::Ask
        } else {
            ApprovalPolicy::default_for(mode.sandbox())
        };
        let policy = self.tool_session.policy.with_mode(mode.sandbox());
        self.tool_session = Arc::new(self.tool_session.with_permissions(policy, approval, false));
        if mode.is_auto() {
            self.config.reviewer = self.config.standby_reviewer.take();
        }
        if let Some(current) = &self.config.mode {
            current.set(mode);
        }
        self.commit(Record::PermissionMode(dsh_protocol::PermissionRecord {
            mode: mode.to_string(),
            approval: approval.to_string(),
            source: "the plan's approval".to_owned(),
        }))
    }

    /// What Auto review reads besides a call, as the history stands now (the calls' own
    /// answer included); `None` without a reviewer.
    fn review_context(&self) -> Option<(Arc<AutoReviewer>, Arc<ReviewContext>)> {
        let reviewer = self.config.reviewer.clone()?;
        let history = self.session.history();
        let from = history.len().saturating_sub(reviewer.transcript_messages());
        let context = ReviewContext {
            task: reviewer.reads_task().then(|| self.turn_task.clone()),
            task_origin: self.turn_origin.words(),
            transcript: history[from..].to_vec(),
        };
        Some((reviewer, Arc::new(context)))
    }

    fn commit_call(
        &mut self,
        turn: u32,
        step: u32,
        id: &str,
        name: &str,
        arguments: &str,
    ) -> Result<(), CoreError> {
        self.commit(Record::ToolCall(ToolCallRecord {
            turn,
            step,
            call_id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        }))
    }

    fn commit_result(
        &mut self,
        turn: u32,
        step: u32,
        id: &str,
        outcome: ToolOutcome,
    ) -> Result<(), CoreError> {
        self.commit(result_record(turn, step, id, outcome))
    }

    /// `text` with the run's secrets taken out. Instruction files are the workspace's text like
    /// any file a tool reads, and a command can copy `.env` into an `AGENTS.md`: what they
    /// deliver is redacted as tool results are, before it is logged or sent.
    fn redacted(&self, text: String) -> String {
        dsh_tools::redacted(self.session.redactor(), text)
    }

    /// Instruction files in folders the file tools just reached (`touched`: the paths their
    /// calls worked on), as user messages after the results.
    fn deliver_nested_instructions(
        &mut self,
        turn: u32,
        touched: &[String],
    ) -> Result<(), CoreError> {
        let Some(settings) = self.config.nested_instructions.clone() else {
            return Ok(());
        };
        let cwd = self.session.cwd().to_path_buf();
        let mut messages = Vec::new();
        for path in touched {
            messages.extend(crate::instructions::nested(
                &cwd,
                std::path::Path::new(path),
                &mut self.probed,
                &settings,
                self.session.loaded_instructions(),
            ));
        }
        for delivery in messages {
            let text = self.redacted(delivery.text);
            self.commit(Record::UserMessage {
                turn,
                message: Message::user_text(text),
                instructions: Some(delivery.files),
            })?;
        }
        Ok(())
    }

    /// After the model completed or blocked its goal in a round: what its closing answer
    /// should say, before its next request.
    fn deliver_goal_wrap_up(&mut self, turn: u32) -> Result<(), CoreError> {
        let Some(text) = self.config.goals.as_ref().and_then(|g| g.take_wrap_up()) else {
            return Ok(());
        };
        self.commit(Record::UserMessage {
            turn,
            message: Message::user_text(text),
            instructions: None,
        })
    }

    /// Tells the model, before its next request, which background jobs and subagents have
    /// finished; returns what those subagents billed.
    fn deliver_notices(&mut self, turn: u32) -> Result<Usage, CoreError> {
        let (notices, usage) = self.take_notices(turn)?;
        if !notices.is_empty() {
            self.commit(Record::UserMessage {
                turn,
                message: Message::user_text(notices.join("\n")),
                instructions: None,
            })?;
        }
        Ok(usage)
    }

    fn commit(&mut self, record: Record) -> Result<(), CoreError> {
        commit(&mut self.session, &self.events, record)
    }
}

pub(crate) fn commit(
    session: &mut Session,
    events: &UnboundedSender<AgentEvent>,
    record: Record,
) -> Result<(), CoreError> {
    let envelope = session.commit(record)?;
    let _ = events.send(AgentEvent::Record(envelope.record));
    Ok(())
}

/// A call between its gates and its PreToolUse hooks' afterword: the PreToolUse hooks (exit
/// 2: not run, and the model reads why), then Auto review (a denial or a failed review: not
/// run, unless the user overrides it), then the call, then the PostToolUse hooks (exit 2: their
/// reason follows the result). Returns the outcome, its review's billing included, and the
/// review's record (its turn is filled in by the agent).
async fn run_gated(
    hooks: Option<&crate::HookRunner>,
    review: Option<(Arc<AutoReviewer>, Arc<ReviewContext>)>,
    call: PreparedCall,
    ctx: &ToolContext,
    name: &str,
    arguments: &str,
) -> (ToolOutcome, Option<AutoReviewRecord>) {
    let hooked = match hooks {
        Some(hooks) => match pre_tool_use(hooks, &call, ctx, name, arguments).await {
            Ok(fields) => Some((hooks, fields)),
            Err(blocked) => return (blocked, None),
        },
        None => None,
    };
    let mut record = None;
    let mut spent = Usage::default();
    if let Some((reviewer, context)) = review.filter(|_| call.auto_reviewed()) {
        let shown = call
            .canonical_arguments()
            .unwrap_or_else(|| arguments.to_owned());
        let Some(mut review) = reviewer.review(&context, name, &shown, &ctx.cancel).await else {
            return (aborted(), None);
        };
        // The reviewer may quote the call, and the call may hold a secret.
        review.reason = dsh_tools::redacted(ctx.session.redactor.as_ref(), review.reason);
        spent = review.usage;
        let mut overridden = false;
        if let Some(mut refusal) = review.refusal() {
            match user_overrides(&review, ctx, name).await {
                Ok(()) => overridden = true,
                Err(said) => {
                    // The user's own reason, when they gave one, follows the reviewer's.
                    if let Some(said) = said.filter(|s| !s.trim().is_empty()) {
                        refusal.message =
                            format!("{}; the user said: {}", refusal.message, said.trim());
                    }
                    let mut outcome = ToolOutcome::failure(refusal);
                    outcome.usage.add(&spent);
                    return (outcome, Some(review_record(review, ctx, name, false)));
                }
            }
        }
        record = Some(review_record(review, ctx, name, overridden));
    }
    let mut outcome = call.run(ctx).await;
    outcome.usage.add(&spent);
    if let Some((hooks, fields)) = hooked {
        post_tool_use(hooks, &mut outcome, fields, ctx, name).await;
    }
    (outcome, record)
}

fn review_record(
    review: crate::auto_review::Review,
    ctx: &ToolContext,
    tool: &str,
    overridden: bool,
) -> AutoReviewRecord {
    AutoReviewRecord {
        turn: 0,
        call_id: ctx.call_id.clone(),
        tool: tool.to_owned(),
        decision: review.decision,
        reason: review.reason,
        model: review.model,
        overridden,
        usage: review.usage,
    }
}

/// Whether the user lets a call the review kept back run all the same: only under
/// `--approval-policy ask`, with someone to ask (the terminal UI, an editor). A headless run
/// has nobody, and the refusal stands. `Err` carries what the user said, if they refused with
/// a reason.
async fn user_overrides(
    review: &crate::auto_review::Review,
    ctx: &ToolContext,
    tool: &str,
) -> Result<(), Option<String>> {
    use dsh_sandbox::escalation::{ApprovalOutcome, ApprovalPolicy};
    let session = &ctx.session;
    let Some(approver) = session.approver.as_ref() else {
        return Err(None);
    };
    if session.approval != ApprovalPolicy::Ask {
        return Err(None);
    }
    let what = match review.decision {
        dsh_protocol::ReviewDecision::Denied => "denied",
        _ => "could not review",
    };
    let request = dsh_sandbox::escalation::ApprovalRequest {
        tool: tool.to_owned(),
        call_id: ctx.call_id.clone(),
        reason: format!("run this call, which auto review {what}: {}", review.reason),
        // One call's override: no "for the session", which would wave later calls past
        // their reviews.
        grant: None,
    };
    let outcome = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => ApprovalOutcome::Cancelled,
        outcome = approver.request(request) => outcome,
    };
    match outcome {
        outcome if outcome.is_allowed() => Ok(()),
        ApprovalOutcome::Rejected { reason } => Err(reason),
        _ => Err(None),
    }
}

fn aborted() -> ToolOutcome {
    ToolOutcome::failure(dsh_tools::ToolError::coded(
        "AbortError",
        "ABORTED",
        "tool call aborted",
    ))
}

/// The PreToolUse hooks of a call: the fields its PostToolUse hooks get too, or the outcome
/// of a call a hook blocked (or that was stopped meanwhile).
async fn pre_tool_use(
    hooks: &crate::HookRunner,
    call: &PreparedCall,
    ctx: &ToolContext,
    name: &str,
    arguments: &str,
) -> Result<(serde_json::Value, Vec<String>), ToolOutcome> {
    let input: serde_json::Value = serde_json::from_str(arguments)
        .unwrap_or_else(|_| serde_json::Value::String(arguments.into()));
    // A hook written for another agent reads the tool by that agent's name.
    let hook_names = call.hook_names();
    let tool_name = hook_names.first().copied().unwrap_or(name);
    let names: Vec<String> = std::iter::once(name)
        .chain(hook_names.iter().copied())
        .map(str::to_owned)
        .collect();
    let fields = serde_json::json!({
        "tool_name": tool_name,
        "dsh_tool_name": name,
        "tool_input": input,
        "tool_use_id": ctx.call_id,
    });
    let matched: Vec<&str> = names.iter().map(String::as_str).collect();
    let verdict = hooks
        .fire(
            HookEvent::PreToolUse,
            Some(&matched),
            fields.clone(),
            &ctx.cancel,
        )
        .await;
    if let Some(why) = verdict.blocked {
        return Err(ToolOutcome::failure(dsh_tools::ToolError::coded(
            "HookError",
            "HOOK_BLOCKED",
            format!("a PreToolUse hook blocked this call: {why}"),
        )));
    }
    if ctx.cancel.is_cancelled() {
        return Err(aborted());
    }
    Ok((fields, names))
}

/// The PostToolUse hooks of a call that ran: a block's reason follows its result.
async fn post_tool_use(
    hooks: &crate::HookRunner,
    outcome: &mut ToolOutcome,
    (mut fields, names): (serde_json::Value, Vec<String>),
    ctx: &ToolContext,
    _name: &str,
) {
    fields["tool_response"] = serde_json::json!({
        "output": outcome.parts.iter().map(dsh_protocol::ToolOutputPart::text).collect::<String>(),
        "is_error": outcome.is_error,
    });
    let matched: Vec<&str> = names.iter().map(String::as_str).collect();
    let verdict = hooks
        .fire(HookEvent::PostToolUse, Some(&matched), fields, &ctx.cancel)
        .await;
    if let Some(why) = verdict.blocked {
        outcome.parts.push(ToolOutputPart::Text {
            text: format!("\n[PostToolUse hook] {why}"),
        });
    }
}

fn result_record(turn: u32, step: u32, id: &str, outcome: ToolOutcome) -> Record {
    Record::ToolResult(ToolResultRecord {
        turn,
        step,
        message: Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_call_id: id.to_owned(),
                content: outcome.parts,
                is_error: outcome.is_error,
            }],
        },
        error: outcome.error,
        command: outcome.command,
    })
}

fn cut_off_outcome() -> ToolOutcome {
    ToolOutcome {
        parts: vec![ToolOutputPart::Text {
            text: "Error: the arguments of this call were cut off at the model's output token \
                   limit, so it was not run; make the call again with shorter arguments"
                .to_owned(),
        }],
        is_error: true,
        error: Some(ErrorInfo::new("ToolArgsError", "INVALID_ARGS")),
        effect: None,
        usage: Usage::default(),
        command: None,
    }
}

/// Whether a step failed because its request did not fit the context window.
fn is_overflow(outcome: &StepOutcome) -> bool {
    matches!(
        &outcome.end,
        Some(TurnEndReason::Error { error }) if error.code == FailureCode::ContextWindowExceeded
    )
}
