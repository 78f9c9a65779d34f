//! Session records: the durable log of a run, one JSON object per line.
//!
//! The record names (`turn/start`, `tool/result`, ...) and the shape of `tool/result` follow the
//! reference's session events, so tools that read its logs for error flags and codes read ours.
//! The header carries our own format version; readers refuse a version they do not know.

use serde::{Deserialize, Serialize};

use crate::{ErrorInfo, Failure, Message, Usage};

/// The version of the session log format this build writes.
pub const SESSION_FORMAT_VERSION: u32 = 1;

/// The first line of a session log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    #[serde(rename = "type")]
    pub kind: HeaderKind,
    pub version: u32,
    pub id: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    /// The working directory the session belongs to; it can be resumed only from there.
    pub cwd: String,
    /// The dsh version that created the log.
    pub dsh: String,
    /// For a subagent's session: the session that started it (the reference's field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// For a subagent's session: how deep below the top agent it is (1 for a direct child).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation_depth: Option<u32>,
    /// For a session made by `--fork`: the session whose history it began with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
}

/// The fixed `type` of a header line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HeaderKind {
    Session,
}

impl SessionHeader {
    pub fn new(id: String, created_at: u64, cwd: String) -> Self {
        SessionHeader {
            kind: HeaderKind::Session,
            version: SESSION_FORMAT_VERSION,
            id,
            created_at,
            cwd,
            dsh: env!("CARGO_PKG_VERSION").to_owned(),
            parent_session: None,
            delegation_depth: None,
            forked_from: None,
        }
    }
}

/// A record with its place in the log: `seq` counts from 1 after the header, `time` is
/// milliseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordEnvelope {
    pub seq: u64,
    pub time: u64,
    #[serde(flatten)]
    pub record: Record,
}

/// Everything a session log records. A record is appended when it is committed; the log is the
/// truth from which a resumed session rebuilds what the model saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum Record {
    #[serde(rename = "turn/start")]
    TurnStart { turn: u32 },
    #[serde(rename = "user/message")]
    UserMessage {
        turn: u32,
        message: Message,
        /// For a message of workspace instructions: the files it delivered, so a resumed
        /// session sends only what changed since.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<Vec<InstructionFile>>,
    },
    #[serde(rename = "step/start")]
    StepStart { turn: u32, step: u32 },
    #[serde(rename = "assistant/message")]
    AssistantMessage(AssistantMessageRecord),
    #[serde(rename = "tool/call")]
    ToolCall(ToolCallRecord),
    #[serde(rename = "tool/result")]
    ToolResult(ToolResultRecord),
    #[serde(rename = "step/end")]
    StepEnd {
        turn: u32,
        step: u32,
        /// The sum of every request the step sent.
        usage: Usage,
    },
    #[serde(rename = "turn/end")]
    TurnEnd { turn: u32, reason: TurnEndReason },
    /// A long tool result cut to its head and tail in the history (the log keeps the whole).
    #[serde(rename = "compaction/prune")]
    CompactionPrune(CompactionPruneRecord),
    /// The start of the history replaced by a summary.
    #[serde(rename = "compaction/summary")]
    CompactionSummary(CompactionSummaryRecord),
    /// The model's task list after a `todo_write` call: the whole list, the latest one wins
    /// (the reference's `todo/write` event).
    #[serde(rename = "todo/write")]
    TodoWrite { turn: u32, todos: Vec<TodoItem> },
    /// A forked subagent's start: the parent's completed turns it begins from.
    #[serde(rename = "session/seed")]
    SessionSeed { messages: Vec<Message> },
    /// A subagent this session started has run: the link to its session, how it ended and what
    /// it billed (the parent's step usage includes it).
    #[serde(rename = "subagent/run")]
    SubagentRun(Box<SubagentRunRecord>),
    /// The session's goal changed (created, edited, paused, resumed, completed, blocked) or a
    /// round toward it started: the whole goal after the change, the latest one wins.
    #[serde(rename = "goal/change")]
    GoalChange(GoalChangeRecord),
    /// The model handed the user something finished to look at (`present`).
    #[serde(rename = "artifact/present")]
    Presentation(Presentation),
    /// The permission mode and approval policy the session runs under from here on: written
    /// when it starts and whenever a resume changes them, so a resume keeps them.
    #[serde(rename = "permission/mode")]
    PermissionMode(PermissionRecord),
    /// Auto review looked at a call before it ran: what it decided, why, and what the review
    /// billed (the step's usage includes it).
    #[serde(rename = "review/decision")]
    AutoReview(AutoReviewRecord),
    /// The workspace's files were checkpointed (at a turn's start or end): the snapshot that
    /// a rewind restores.
    #[serde(rename = "checkpoint")]
    Checkpoint(CheckpointRecord),
    /// The session went back to the start of a turn (its files, its conversation or both),
    /// or undid the rewind before: later records stay in the log, but what the model sees
    /// next is the conversation as it was then.
    #[serde(rename = "rewind")]
    Rewind(RewindRecord),
    /// The title the model wrote for the session after its first turn (one short request on
    /// the session's route, outside any step): lists show it where the user gave none.
    #[serde(rename = "session/title")]
    SessionTitle(SessionTitleRecord),
}

/// A session's title, written by the model, and what the request cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionTitleRecord {
    /// The turn it was written after.
    pub turn: u32,
    pub title: String,
    /// The model that wrote it.
    pub model: String,
    pub usage: Usage,
}

/// One checkpoint of the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointRecord {
    pub turn: u32,
    pub at: CheckpointAt,
    /// The snapshot's id in the workspace's checkpoint store.
    pub snapshot: String,
    /// The files and links it covers.
    pub files: u32,
    /// Files it left out for their size: a rewind cannot bring them back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncovered: Vec<String>,
    /// How long taking it took, in milliseconds.
    pub ms: u64,
    /// For a checkpoint before an escalated call: the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// When in its turn a checkpoint was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointAt {
    Start,
    End,
    /// Just before a call that asked to run outside the sandbox.
    BeforeEscalation,
}

/// One rewind, or the undoing of one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RewindRecord {
    /// The turn whose start the session went back to; none for an undo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_turn: Option<u32>,
    /// The escalated call whose checkpoint the files went back to (files only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_call: Option<String>,
    /// Whether it undid the rewind before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undo: bool,
    /// Whether the files were put back.
    pub files: bool,
    /// Whether the conversation was taken back.
    pub conversation: bool,
    /// The snapshot of the files just before it: what undoes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
    /// The snapshot the files were made to match: the state later changes are judged from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<String>,
    /// Paths written back and removed.
    #[serde(default)]
    pub written: u32,
    #[serde(default)]
    pub removed: u32,
}

impl RewindRecord {
    /// What it did, in words: `rewound files and conversation to before turn 2 (3 written
    /// back, 1 removed)`.
    pub fn headline(&self) -> String {
        let what = match (self.files, self.conversation) {
            (true, true) => "files and conversation",
            (true, false) => "files",
            _ => "conversation",
        };
        match (&self.before_call, self.to_turn) {
            (Some(call), _) => format!(
                "rewound {what} to before the escalated call {call} ({} written back, {} \
                 removed)",
                self.written, self.removed
            ),
            (None, Some(turn)) => format!(
                "rewound {what} to before turn {turn} ({} written back, {} removed)",
                self.written, self.removed
            ),
            (None, None) => format!("undid the last rewind of {what}"),
        }
    }
}

/// One Auto review of one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AutoReviewRecord {
    pub turn: u32,
    pub call_id: String,
    pub tool: String,
    pub decision: ReviewDecision,
    /// The reviewer's reason, or for a failed review what went wrong.
    pub reason: String,
    /// The model that reviewed it.
    pub model: String,
    /// A denial the user overrode (`--approval-policy ask` with someone to ask): the call ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub overridden: bool,
    pub usage: Usage,
}

/// What an Auto review decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewDecision {
    Allowed,
    Denied,
    /// The reviewer failed, timed out or did not answer with a decision: the call did not run.
    Failed,
}

impl ReviewDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewDecision::Allowed => "allowed",
            ReviewDecision::Denied => "denied",
            ReviewDecision::Failed => "failed",
        }
    }
}

/// A session's permission mode and approval policy, and what set them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRecord {
    /// `read-only`, `workspace-write`, `danger-full-access` or `plan`.
    pub mode: String,
    /// `ask` or `never`.
    pub approval: String,
    /// Where they came from: `default`, a config file, a variable, a flag.
    pub source: String,
}

/// Something finished the model hands the user to look at: a file, a summary, or both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Presentation {
    pub turn: u32,
    /// What it is, in a few words.
    pub title: String,
    /// The file, as an absolute path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// What to know about it, as markdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// One change of the session's goal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalChangeRecord {
    pub turn: u32,
    pub operation: GoalOperation,
    pub goal: Goal,
}

impl GoalChangeRecord {
    /// The change in a line, as front ends show it: `goal round 2/256: <objective>`.
    pub fn headline(&self) -> String {
        let goal = &self.goal;
        let what = match self.operation {
            GoalOperation::Create => "set".to_owned(),
            GoalOperation::Edit => "edited".to_owned(),
            GoalOperation::Pause => "paused".to_owned(),
            GoalOperation::Resume => "resumed".to_owned(),
            GoalOperation::Complete => "complete".to_owned(),
            GoalOperation::Block => "blocked".to_owned(),
            GoalOperation::Round => {
                format!("round {}/{}", goal.rounds_started, goal.max_goal_rounds)
            }
        };
        let mut line = format!("goal {what}: {}", goal.objective);
        if let Some(reason) = &goal.blocked_reason {
            line.push_str(&format!(" ({}: {})", reason.code, reason.message));
        }
        line
    }
}

/// What changed a goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalOperation {
    Create,
    Edit,
    Pause,
    Resume,
    Complete,
    Block,
    /// An automatic round toward it started (`roundsStarted` went up by one).
    Round,
}

impl GoalOperation {
    pub fn as_str(self) -> &'static str {
        match self {
            GoalOperation::Create => "create",
            GoalOperation::Edit => "edit",
            GoalOperation::Pause => "pause",
            GoalOperation::Resume => "resume",
            GoalOperation::Complete => "complete",
            GoalOperation::Block => "block",
            GoalOperation::Round => "round",
        }
    }
}

/// A session's long-running objective, which the runtime keeps working toward in automatic
/// rounds while it is active. Its fields in the order the goal tools answer with them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Goal {
    /// `goal-` and a UUID.
    pub id: String,
    /// 1 when created, one more with each change (a round is not a change).
    pub revision: u64,
    pub objective: String,
    pub phase: GoalPhase,
    /// The automatic rounds started toward it.
    pub rounds_started: u64,
    /// The most automatic rounds it may take.
    pub max_goal_rounds: u64,
    /// Why it is blocked; only while it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<BlockedReason>,
}

/// Where a goal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalPhase {
    Active,
    Paused,
    Blocked,
    Complete,
}

impl GoalPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            GoalPhase::Active => "active",
            GoalPhase::Paused => "paused",
            GoalPhase::Blocked => "blocked",
            GoalPhase::Complete => "complete",
        }
    }
}

/// Why a goal is blocked: a kebab-case code (`model-reported`, `round-limit`) and a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockedReason {
    pub code: String,
    pub message: String,
}

/// One subagent run, as its parent records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentRunRecord {
    pub turn: u32,
    /// The id the parent's stream tags the child's events with (`subagent-1`).
    pub agent_id: String,
    /// The child's own session (its log is beside the parent's).
    pub session_id: String,
    /// The short description the model gave.
    pub label: String,
    /// Whether it began from the parent's history.
    pub fork: bool,
    /// The narrower tool list it was given, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Whether it works under a read-only sandbox.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// Whether it runs in the background: such a child takes messages after its turns,
    /// also once the parent's session is resumed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// The highest subagent id number the run had handed out when this was recorded (its
    /// children's children's too, which only their own parents' logs name): a resumed run's
    /// new ids come after it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ids_used: u32,
    pub reason: TurnEndReason,
    pub usage: Usage,
}

/// One task of the model's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    pub content: String,
    pub status: TodoStatus,
}

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

impl TodoStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
        }
    }
}

/// One instruction file as a message delivered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstructionFile {
    /// Its absolute path.
    pub path: String,
    /// The sha256 (hex) of what was delivered; `None`: the message said it no longer applies.
    pub digest: Option<String>,
}

/// One pruned tool result: the result of `call_id` now reads `message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionPruneRecord {
    pub turn: u32,
    /// The pruned message's place in the history.
    pub index: u32,
    pub call_id: String,
    pub message: Message,
}

/// The first `replaced` messages of the history, replaced by `message` (a user message holding
/// the summary). `usage` is what the summary request cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummaryRecord {
    pub turn: u32,
    pub replaced: u32,
    pub message: Message,
    /// `threshold` (the history passed its share of the context window), `overflow` (the
    /// provider said the request did not fit) or `manual` (the user asked, `/compact`).
    pub reason: String,
    /// The history's estimated size before and after, in tokens.
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub model: String,
    pub usage: Usage,
}

/// A committed model answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessageRecord {
    pub turn: u32,
    pub step: u32,
    pub message: Message,
    pub finish: FinishReason,
    pub provider: String,
    pub model: String,
    /// What this request cost (one request; the step's sum is on `step/end`).
    pub usage: Usage,
}

/// A tool call about to run. `arguments` is the model's raw argument text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRecord {
    pub turn: u32,
    pub step: u32,
    pub call_id: String,
    pub name: String,
    pub arguments: String,
}

/// A tool's result. `message` is a user message holding one `tool-result` block, exactly what is
/// sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultRecord {
    pub turn: u32,
    pub step: u32,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    /// For a command (`bash`): how it ended, as data beside the text's markers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandOutcome>,
}

/// How a command ended, for supervisors that should not parse the result's markers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandOutcome {
    /// Its exit status, when it exited (not killed, not still running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that killed it (`SIGTERM`, `SIGKILL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// It was stopped at its timeout (no job could take it over).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// The background job that holds it: started with `run_in_background`, or moved there at
    /// its timeout; it has not ended yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// Its output was cut in the result (the whole is in the spill file it names).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// Why the model stopped producing output in one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    MaxTokens,
}

/// How a turn ended: the durable reason of `turn/end`, projected unchanged into `--json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TurnEndReason {
    /// The model answered without calling a tool.
    Completed,
    /// The run was stopped from outside.
    Aborted { reason: AbortReason },
    /// A request failed for good.
    Error { error: Failure },
    /// The model's final answer was cut at its output token limit.
    MaxTokens,
    /// The process died mid-turn; written when the log is repaired on load.
    Interrupted,
    /// In plan mode, the model submitted its plan (`exit_plan_mode`) and no one was there to
    /// approve it: the plan is the turn's answer.
    PlanSubmitted,
    /// The run made the most model requests `--max-turns` allows.
    MaxTurns { message: String },
    /// The run spent what `--max-budget-usd` allows, at the model's prices.
    MaxBudget { message: String },
    /// The run's time (`--timeout`) ran out.
    Timeout { message: String },
    /// The final answer did not match `--output-schema`, after the corrections allowed.
    OutputSchema { message: String },
}

impl TurnEndReason {
    pub fn is_completed(&self) -> bool {
        matches!(self, TurnEndReason::Completed)
    }

    /// Whether the turn ended with an answer the run was asked for: a completed turn, or a plan
    /// submitted in plan mode.
    pub fn is_answer(&self) -> bool {
        matches!(
            self,
            TurnEndReason::Completed | TurnEndReason::PlanSubmitted
        )
    }

    /// For a turn that ended in failure or at a run cap: the code a supervisor matches on
    /// (the provider's failure code, `MAX_TURNS`, `MAX_BUDGET`, `RUN_TIMEOUT`, `OUTPUT_SCHEMA`)
    /// and what happened.
    pub fn failure(&self) -> Option<(std::borrow::Cow<'static, str>, &str)> {
        match self {
            TurnEndReason::Error { error } => Some((error.code.as_str(), &error.message)),
            TurnEndReason::MaxTurns { message } => Some(("MAX_TURNS".into(), message)),
            TurnEndReason::MaxBudget { message } => Some(("MAX_BUDGET".into(), message)),
            TurnEndReason::Timeout { message } => Some(("RUN_TIMEOUT".into(), message)),
            TurnEndReason::OutputSchema { message } => Some(("OUTPUT_SCHEMA".into(), message)),
            _ => None,
        }
    }
}

/// What stopped an aborted turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum AbortReason {
    /// A signal delivered to the process (`SIGINT`, `SIGTERM`).
    Signal { signal: String },
    /// For a subagent: the agent that started it stopped.
    Parent,
    /// The person at an interactive front end interrupted the turn (Ctrl-C in the terminal
    /// UI); the session goes on with their next message.
    User,
}

/// One session as `dsh sessions list` shows it; with `--json`, one object per line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: String,
    /// The session's title, if it has one: the one the user gave it (`dsh sessions rename`,
    /// the web app), else the one the model wrote after its first turn; lists show it in
    /// place of the first task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    /// The first line of the first task.
    pub first_task: String,
    pub turns: u32,
    /// Every token the session's requests were billed for, as reported.
    pub total_tokens: u64,
    /// For a subagent's session: the session that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// Its log file.
    pub path: String,
}

impl SessionSummary {
    /// What lists call the session: its title, else the first line of its first task.
    pub fn name(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.first_task)
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Block, Role, ToolOutputPart};
    use pretty_assertions::assert_eq;

    #[test]
    fn tool_results_have_the_shape_conformance_tools_read() {
        let record = RecordEnvelope {
            seq: 7,
            time: 1,
            record: Record::ToolResult(ToolResultRecord {
                turn: 1,
                step: 2,
                message: Message {
                    role: Role::User,
                    content: vec![Block::ToolResult {
                        tool_call_id: "call_1".into(),
                        content: vec![ToolOutputPart::Text {
                            text: "Error: x".into(),
                        }],
                        is_error: true,
                    }],
                },
                error: Some(ErrorInfo::new("FsError", "FS_NOT_FOUND")),
                command: None,
            }),
        };
        let json = serde_json::to_string(&record).unwrap();
        assert_eq!(
            json,
            r#"{"seq":7,"time":1,"type":"tool/result","data":{"turn":1,"step":2,"message":{"role":"user","content":[{"type":"tool-result","toolCallId":"call_1","content":[{"type":"text","text":"Error: x"}],"isError":true}]},"error":{"name":"FsError","code":"FS_NOT_FOUND"}}}"#
        );
        let back: RecordEnvelope = serde_json::from_str(&json).unwrap();
        assert_eq!(back, record);
    }

    #[test]
    fn turn_end_reasons_keep_the_reference_shapes() {
        let aborted = TurnEndReason::Aborted {
            reason: AbortReason::Signal {
                signal: "SIGTERM".into(),
            },
        };
        assert_eq!(
            serde_json::to_string(&aborted).unwrap(),
            r#"{"kind":"aborted","reason":{"kind":"signal","signal":"SIGTERM"}}"#
        );
        assert_eq!(
            serde_json::to_string(&TurnEndReason::MaxTokens).unwrap(),
            r#"{"kind":"max-tokens"}"#
        );
    }
}
