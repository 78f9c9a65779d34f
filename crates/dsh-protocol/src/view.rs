//! How a record shows: one [`View`] of each record, computed here once, that every front end
//! renders (the terminal UI, the `--json` stream and the text output, `dsh sessions show`, ACP,
//! the MCP server mode and the web page, which receives views as JSON). A front end matches
//! views, never record types, so a new record kind is one arm of [`Record::view`] and every
//! front end shows it; `samples` holds one record of each kind for the tests that say so.
//!
//! Most of what happens in a session that is neither a message nor a call is a [`Card`]: a
//! headline with an icon and a tone, and what else there is (a file, a markdown body, a note
//! of details). A front end renders every card the same way, whatever it is about.

use serde::Serialize;

use crate::{
    AssistantMessageRecord, Block, Message, PermissionRecord, Record, ReviewDecision, TodoItem,
    ToolCallRecord, ToolResultRecord, TurnEndReason, Usage,
};

/// What a record is to the person reading the session. Serialised for the web page, tagged
/// by `view`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "view", rename_all = "snake_case")]
pub enum View<'a> {
    /// A turn began: front ends start counting its steps and usage.
    TurnStart { turn: u32 },
    /// A request to the model began.
    StepStart { turn: u32, step: u32 },
    /// A request ended, with what it billed.
    StepEnd {
        turn: u32,
        step: u32,
        usage: &'a Usage,
    },
    /// A turn ended, and how.
    TurnEnd {
        turn: u32,
        reason: &'a TurnEndReason,
    },
    /// What the person sent: its text and images.
    User { message: &'a Message },
    /// The model's answer: its reasoning and text (the calls it asks for show as calls).
    Answer(&'a AssistantMessageRecord),
    /// A tool call about to run; front ends describe it with the run's `ToolCatalog`.
    Call(&'a ToolCallRecord),
    /// What a call returned.
    Result(&'a ToolResultRecord),
    /// The model's task list, whole.
    Todos { todos: &'a [TodoItem] },
    /// The permission mode the session runs under from here on, for a status line or a picker.
    Mode(&'a PermissionRecord),
    /// Anything else worth a line: see [`Card`].
    Card(Card<'a>),
    /// Deliberately not shown, and why.
    Hidden { why: Hidden },
}

/// Why a record is not shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Hidden {
    /// A snapshot of the workspace's files, kept for rewinds: what a turn changed shows in its
    /// calls, and a rewind is a card of its own.
    Checkpoint,
    /// A tool result cut short in what the model is sent next; the result was shown whole.
    Pruned,
}

/// A card: what happened, in a headline a front end shows in one line, with its icon and its
/// tone, and what else there is to see.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Card<'a> {
    /// What the card is about, with the state a front end keeps from it (the goal in a status
    /// line, a subagent in a panel); it never changes how the card itself is drawn.
    #[serde(flatten)]
    pub kind: CardKind<'a>,
    /// One character that marks the card's kind in a transcript.
    pub icon: &'static str,
    pub tone: Tone,
    pub headline: String,
    /// A file it hands over or is about, as an absolute path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<&'a str>,
    /// A body, as markdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<&'a str>,
    /// Details for a reader who wants everything (`dsh sessions show`, the web page): ids,
    /// models, tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Kept for the record but needing no attention (a call the review allowed): a front end
    /// that shows only what matters leaves it out.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub routine: bool,
}

impl Card<'_> {
    /// The card in one line, as front ends without room for more show it: the headline, and
    /// the file after a colon.
    pub fn line(&self) -> String {
        match self.path {
            Some(path) => format!("{}: {path}", self.headline),
            None => self.headline.clone(),
        }
    }
}

/// What a card is about.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", content = "state", rename_all = "snake_case")]
pub enum CardKind<'a> {
    /// Something finished the model hands the user (`present`).
    Present,
    /// The session's goal changed, or a round toward it started.
    Goal(&'a crate::GoalChangeRecord),
    /// Auto review's decision on a call.
    Review,
    /// A subagent's run ended.
    Subagent(&'a crate::SubagentRunRecord),
    /// The files or the conversation went back to a turn's start.
    Rewind,
    /// The older history was replaced by a summary (what it billed is outside any step when
    /// the user asked for it).
    Compaction(&'a crate::CompactionSummaryRecord),
    /// The session began from its parent's history (a fork), which it holds.
    Fork { messages: &'a [Message] },
    /// Workspace instructions were given to the model.
    Instructions,
    /// The model wrote the session's title (what it billed is outside any step).
    Title(&'a crate::SessionTitleRecord),
}

/// How a card asks to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    /// Bookkeeping a reader may skip.
    Quiet,
    /// Worth noticing.
    Accent,
    /// Something handed to the person.
    Handed,
    /// Something that did not go as asked.
    Warning,
    /// Something refused or failed.
    Failure,
}

impl Record {
    /// How this record shows, for every front end.
    pub fn view(&self) -> View<'_> {
        match self {
            Record::TurnStart { turn } => View::TurnStart { turn: *turn },
            Record::StepStart { turn, step } => View::StepStart {
                turn: *turn,
                step: *step,
            },
            Record::StepEnd { turn, step, usage } => View::StepEnd {
                turn: *turn,
                step: *step,
                usage,
            },
            Record::TurnEnd { turn, reason } => View::TurnEnd {
                turn: *turn,
                reason,
            },
            Record::UserMessage {
                instructions: Some(files),
                ..
            } => View::Card(Card {
                headline: format!(
                    "workspace instructions: {}",
                    (files.iter().map(|f| f.path.as_str()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                ..card(CardKind::Instructions, "·", Tone::Quiet)
            }),
            Record::UserMessage { message, .. } => View::User { message },
            Record::AssistantMessage(answer) => View::Answer(answer),
            Record::ToolCall(call) => View::Call(call),
            Record::ToolResult(result) => View::Result(result),
            Record::TodoWrite { todos, .. } => View::Todos { todos },
            Record::PermissionMode(permission) => View::Mode(permission),
            Record::Checkpoint(_) => View::Hidden {
                why: Hidden::Checkpoint,
            },
            Record::CompactionPrune(_) => View::Hidden {
                why: Hidden::Pruned,
            },
            Record::CompactionSummary(summary) => View::Card(Card {
                headline: format!(
                    "history compacted ({}): about {} → {} tokens",
                    summary.reason, summary.tokens_before, summary.tokens_after
                ),
                note: Some(format!(
                    "{} earlier messages summarised by {}, {} tokens",
                    summary.replaced, summary.model, summary.usage.total_tokens
                )),
                ..card(CardKind::Compaction(summary), "·", Tone::Quiet)
            }),
            Record::SessionSeed { messages } => View::Card(Card {
                headline: format!(
                    "forked: begins with {} messages of its parent's history",
                    messages.len()
                ),
                ..card(CardKind::Fork { messages }, "·", Tone::Quiet)
            }),
            Record::SubagentRun(run) => View::Card(Card {
                headline: format!("{} ({}) ended its turn", run.agent_id, run.label),
                note: Some(format!(
                    "{}, session {}, ended: {}, {} tokens",
                    if run.fork {
                        "forked subagent"
                    } else {
                        "subagent"
                    },
                    run.session_id,
                    reason_kind(&run.reason),
                    run.usage.total_tokens
                )),
                ..card(CardKind::Subagent(run), "·", Tone::Quiet)
            }),
            Record::GoalChange(change) => View::Card(Card {
                headline: change.headline(),
                note: Some(format!(
                    "{}, revision {}",
                    change.goal.phase.as_str(),
                    change.goal.revision
                )),
                ..card(CardKind::Goal(change), "◎", Tone::Accent)
            }),
            Record::Presentation(shown) => View::Card(Card {
                headline: shown.title.clone(),
                path: shown.path.as_deref(),
                detail: shown.summary.as_deref(),
                ..card(CardKind::Present, "▣", Tone::Handed)
            }),
            Record::AutoReview(review) => {
                let (what, tone) = match (review.decision, review.overridden) {
                    (ReviewDecision::Allowed, _) => ("allowed", Tone::Quiet),
                    (ReviewDecision::Denied, true) => ("denied, run anyway by you", Tone::Warning),
                    (ReviewDecision::Denied, false) => ("denied", Tone::Failure),
                    (ReviewDecision::Failed, _) => ("failed", Tone::Failure),
                };
                View::Card(Card {
                    headline: format!("auto review {what}: {}", review.reason),
                    note: Some(format!(
                        "{} ({}), reviewed by {}, {} tokens",
                        review.tool, review.call_id, review.model, review.usage.total_tokens
                    )),
                    routine: review.decision == ReviewDecision::Allowed,
                    ..card(CardKind::Review, "⚖", tone)
                })
            }
            Record::Rewind(rewind) => View::Card(Card {
                headline: rewind.headline(),
                ..card(CardKind::Rewind, "↶", Tone::Warning)
            }),
            Record::SessionTitle(titled) => View::Card(Card {
                headline: format!("session titled: {}", titled.title),
                note: Some(format!(
                    "by {}, {} tokens",
                    titled.model, titled.usage.total_tokens
                )),
                // Lists and headers show the title; the conversation needs no word of it.
                routine: true,
                ..card(CardKind::Title(titled), "·", Tone::Quiet)
            }),
        }
    }
}

/// A card with nothing but its kind, icon and tone.
fn card<'a>(kind: CardKind<'a>, icon: &'static str, tone: Tone) -> Card<'a> {
    Card {
        kind,
        icon,
        tone,
        headline: String::new(),
        path: None,
        detail: None,
        note: None,
        routine: false,
    }
}

/// How a turn ended, in its tag's words (`completed`, `max-tokens`).
pub fn reason_kind(reason: &TurnEndReason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v["kind"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// One record of each kind, as a session could hold them: for the tests that check every
/// front end shows every kind (a kind missing here fails the test beside [`Record::view`]).
pub fn samples() -> Vec<Record> {
    use crate::{
        CheckpointAt, CheckpointRecord, CompactionPruneRecord, CompactionSummaryRecord, Goal,
        GoalChangeRecord, GoalOperation, GoalPhase, InstructionFile, Presentation, RewindRecord,
        SessionTitleRecord, SubagentRunRecord, TodoStatus,
    };
    let usage = Usage::default();
    vec![
        Record::PermissionMode(PermissionRecord {
            mode: "workspace-write".into(),
            approval: "ask".into(),
            source: "default".into(),
        }),
        Record::SessionSeed {
            messages: vec![Message::user_text("the parent's task")],
        },
        Record::TurnStart { turn: 1 },
        Record::Checkpoint(CheckpointRecord {
            turn: 1,
            at: CheckpointAt::Start,
            snapshot: "snap-1".into(),
            files: 3,
            uncovered: Vec::new(),
            ms: 2,
            call_id: None,
        }),
        Record::UserMessage {
            turn: 1,
            message: Message::user_text("# AGENTS.md\nUse tabs."),
            instructions: Some(vec![InstructionFile {
                path: "/work/AGENTS.md".into(),
                digest: Some("00".into()),
            }]),
        },
        Record::UserMessage {
            turn: 1,
            message: Message::user_text("what does a.txt say?"),
            instructions: None,
        },
    ]
    .into_iter()
    .chain(step_samples(usage))
    .chain([
        Record::TodoWrite {
            turn: 1,
            todos: vec![TodoItem {
                content: "Read a.txt".into(),
                status: TodoStatus::Completed,
            }],
        },
        Record::GoalChange(GoalChangeRecord {
            turn: 1,
            operation: GoalOperation::Create,
            goal: Goal {
                id: "goal-1".into(),
                revision: 1,
                objective: "Read every file".into(),
                phase: GoalPhase::Active,
                rounds_started: 0,
                max_goal_rounds: 3,
                blocked_reason: None,
            },
        }),
        Record::Presentation(Presentation {
            turn: 1,
            title: "The report".into(),
            path: Some("/work/report.md".into()),
            summary: Some("What a.txt says.".into()),
        }),
        Record::SubagentRun(Box::new(SubagentRunRecord {
            turn: 1,
            agent_id: "subagent-1".into(),
            session_id: "session-2".into(),
            label: "look around".into(),
            fork: false,
            tools: None,
            read_only: true,
            background: false,
            ids_used: 1,
            reason: TurnEndReason::Completed,
            usage,
        })),
        Record::StepEnd {
            turn: 1,
            step: 1,
            usage,
        },
        Record::CompactionPrune(CompactionPruneRecord {
            turn: 1,
            index: 3,
            call_id: "call_1".into(),
            message: read_result(),
        }),
        Record::CompactionSummary(CompactionSummaryRecord {
            turn: 1,
            replaced: 4,
            message: Message::user_text("the summary"),
            reason: "manual".into(),
            tokens_before: 900,
            tokens_after: 100,
            model: "deepseek-chat".into(),
            usage,
        }),
        Record::TurnEnd {
            turn: 1,
            reason: TurnEndReason::Completed,
        },
        Record::SessionTitle(SessionTitleRecord {
            turn: 1,
            title: "What a.txt says".into(),
            model: "deepseek-chat".into(),
            usage,
        }),
        Record::Rewind(RewindRecord {
            to_turn: Some(1),
            before_call: None,
            undo: false,
            files: true,
            conversation: true,
            backup: Some("snap-2".into()),
            restored: Some("snap-1".into()),
            written: 1,
            removed: 0,
        }),
    ])
    .collect()
}

/// The samples of a step: a request, its answer, a call with its review and result.
fn step_samples(usage: Usage) -> Vec<Record> {
    use crate::{AutoReviewRecord, FinishReason};
    vec![
        Record::StepStart { turn: 1, step: 1 },
        Record::AssistantMessage(AssistantMessageRecord {
            turn: 1,
            step: 1,
            message: Message {
                role: crate::Role::Assistant,
                content: vec![
                    Block::Text {
                        text: "Reading it.".into(),
                    },
                    Block::ToolCall {
                        id: "call_1".into(),
                        name: "read".into(),
                        arguments: r#"{"file_path":"a.txt"}"#.into(),
                    },
                ],
            },
            finish: FinishReason::ToolCalls,
            provider: "deepseek".into(),
            model: "deepseek-chat".into(),
            usage,
        }),
        Record::AutoReview(AutoReviewRecord {
            turn: 1,
            call_id: "call_1".into(),
            tool: "read".into(),
            decision: ReviewDecision::Denied,
            reason: "reads a file nobody asked for".into(),
            model: "reviewer".into(),
            overridden: false,
            usage,
        }),
        Record::ToolCall(ToolCallRecord {
            turn: 1,
            step: 1,
            call_id: "call_1".into(),
            name: "read".into(),
            arguments: r#"{"file_path":"a.txt"}"#.into(),
        }),
        Record::ToolResult(ToolResultRecord {
            turn: 1,
            step: 1,
            message: read_result(),
            error: None,
            command: None,
        }),
    ]
}

/// The result of the samples' call.
fn read_result() -> Message {
    Message {
        role: crate::Role::User,
        content: vec![Block::ToolResult {
            tool_call_id: "call_1".into(),
            content: vec![crate::ToolOutputPart::Text {
                text: "alpha\n".into(),
            }],
            is_error: false,
        }],
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Every record kind's tag, as serde knows them: the error for a kind it does not know
    /// lists them all, so this list needs no keeping.
    fn every_kind() -> BTreeSet<String> {
        let error = serde_json::from_str::<Record>(r#"{"type":"no/such-kind","data":{}}"#)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let listed = error.split("expected one of").nth(1).unwrap_or_default();
        let kinds: BTreeSet<String> = (listed.split('`').skip(1).step_by(2))
            .map(str::to_owned)
            .collect();
        assert!(kinds.contains("turn/start"), "{error}");
        kinds
    }

    fn kind(record: &Record) -> String {
        serde_json::to_value(record).unwrap()["type"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn every_record_kind_has_a_view_or_is_hidden_on_purpose() {
        let sampled: BTreeSet<String> = samples().iter().map(kind).collect();
        assert_eq!(sampled, every_kind(), "one sample of each record kind");
        for record in samples() {
            let hidden = matches!(record.view(), View::Hidden { .. });
            let on_purpose = ["checkpoint", "compaction/prune"].contains(&kind(&record).as_str());
            assert_eq!(hidden, on_purpose, "{record:?}");
        }
    }

    #[test]
    fn a_card_serialises_flat_for_the_web_page() {
        let present = samples()
            .into_iter()
            .find(|r| matches!(r, Record::Presentation(_)))
            .unwrap();
        let json = serde_json::to_value(present.view()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "view": "card", "kind": "present", "icon": "▣", "tone": "handed",
                "headline": "The report", "path": "/work/report.md",
                "detail": "What a.txt says.",
            })
        );
        let goal = samples()
            .into_iter()
            .find(|r| matches!(r, Record::GoalChange(_)))
            .unwrap();
        let json = serde_json::to_value(goal.view()).unwrap();
        assert_eq!(json["kind"], "goal");
        assert_eq!(json["state"]["goal"]["phase"], "active");
        assert_eq!(json["headline"], "goal set: Read every file");
    }
}
