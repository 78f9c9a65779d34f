//! Closing what a dead process left open, so the history a resumed session sends is valid.
//!
//! A log cut off mid-turn ends inside a turn, maybe inside a step, maybe after an answer whose
//! tool calls have no results. [`OpenTurn`] gives the records that close it, as the reference
//! does: a result for each unanswered call (`TOOL_OUTCOME_UNKNOWN` when the call was recorded as
//! started, so it may have had effects; `TOOL_NOT_STARTED` when it was not), the step's end,
//! and the turn's end as `interrupted`.

use dsh_protocol::{
    Block, ErrorInfo, Message, Record, Role, ToolOutputPart, ToolResultRecord, TurnEndReason, Usage,
};

/// The reference's text for a call that was recorded as started but has no result.
pub const OUTCOME_UNKNOWN_TEXT: &str = "The tool call was interrupted after it was recorded, but \
no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool \
semantics: retry only if the operation is read-only or idempotent; if it may have side effects, \
first verify external state or ask the user. Do not retry blindly.";

/// The reference's text for a call that never started.
pub const NOT_STARTED_TEXT: &str = "The tool call was interrupted before the Harness recorded it \
as started. Retry it if it is still needed.";

/// What is left open at the end of a log, taken in a record at a time (a resume reads a long
/// log once and holds none of it): [`OpenTurn::closing`] then gives the records that close it.
#[derive(Default)]
pub(crate) struct OpenTurn {
    open_turn: Option<u32>,
    open_step: Option<(u32, u32)>,
    /// The calls of the open step's answer: (id, recorded as started, answered).
    calls: Vec<(String, bool, bool)>,
    /// What the open step's answer cost, once it was committed.
    answered: Option<Usage>,
    /// What the open step's reviews and subagents billed: its usage includes them.
    spent: Usage,
}

impl OpenTurn {
    pub(crate) fn note(&mut self, record: &Record) {
        let OpenTurn {
            open_turn,
            open_step,
            calls,
            answered,
            spent,
        } = self;
        match record {
            Record::TurnStart { turn } => {
                *open_turn = Some(*turn);
                *open_step = None;
                calls.clear();
            }
            Record::TurnEnd { .. } => {
                *open_turn = None;
                *open_step = None;
                calls.clear();
            }
            Record::StepStart { turn, step } => {
                *open_step = Some((*turn, *step));
                calls.clear();
                *answered = None;
                *spent = Usage::default();
            }
            Record::StepEnd { .. } => {
                *open_step = None;
                calls.clear();
            }
            Record::AssistantMessage(data) => {
                *answered = Some(data.usage);
                *calls = data
                    .message
                    .tool_calls()
                    .map(|(id, _, _)| (id.to_owned(), false, false))
                    .collect();
            }
            Record::ToolCall(call) => {
                if let Some(entry) = calls.iter_mut().find(|c| c.0 == call.call_id) {
                    entry.1 = true;
                }
            }
            Record::ToolResult(result) => {
                for block in &result.message.content {
                    if let Block::ToolResult { tool_call_id, .. } = block
                        && let Some(entry) = calls.iter_mut().find(|c| &c.0 == tool_call_id)
                    {
                        entry.2 = true;
                    }
                }
            }
            Record::UserMessage { .. }
            | Record::CompactionPrune(_)
            | Record::CompactionSummary(_)
            | Record::TodoWrite { .. }
            | Record::GoalChange(_)
            | Record::Presentation(_)
            | Record::PermissionMode(_)
            | Record::Checkpoint(_)
            | Record::Rewind(_)
            | Record::SessionSeed { .. } => {}
            Record::SubagentRun(run) => spent.add(&run.usage),
            Record::AutoReview(review) => spent.add(&review.usage),
            // Written after its turn ended, outside any step.
            Record::SessionTitle(_) => {}
        }
    }

    /// The records that close the turn left open; none when every turn ended.
    pub(crate) fn closing(self) -> Vec<Record> {
        let OpenTurn {
            open_turn,
            open_step,
            calls,
            answered,
            spent,
        } = self;
        let Some(turn) = open_turn else {
            return Vec::new();
        };
        let mut closing = Vec::new();
        if let Some((step_turn, step)) = open_step {
            for (id, started, _) in calls.iter().filter(|c| !c.2) {
                let (text, name, code) = if *started {
                    (
                        OUTCOME_UNKNOWN_TEXT,
                        "ToolOutcomeUnknownError",
                        "TOOL_OUTCOME_UNKNOWN",
                    )
                } else {
                    (NOT_STARTED_TEXT, "ToolNotStartedError", "TOOL_NOT_STARTED")
                };
                closing.push(Record::ToolResult(ToolResultRecord {
                    turn: step_turn,
                    step,
                    message: Message {
                        role: Role::User,
                        content: vec![Block::ToolResult {
                            tool_call_id: id.clone(),
                            content: vec![ToolOutputPart::Text {
                                text: text.to_owned(),
                            }],
                            is_error: true,
                        }],
                    },
                    error: Some(ErrorInfo::new(name, code)),
                    command: None,
                }));
            }
            // Without a committed answer the request may still have been billed; nobody said for
            // how much.
            let mut usage = answered.unwrap_or_else(Usage::unreported);
            usage.add(&spent);
            closing.push(Record::StepEnd {
                turn: step_turn,
                step,
                usage,
            });
        }
        closing.push(Record::TurnEnd {
            turn,
            reason: TurnEndReason::Interrupted,
        });
        closing
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::{AssistantMessageRecord, FinishReason, RecordEnvelope, ToolCallRecord};

    /// The records that close an open turn at the end of `records`.
    fn repair(records: &[RecordEnvelope]) -> Vec<Record> {
        let mut open = OpenTurn::default();
        for envelope in records {
            open.note(&envelope.record);
        }
        open.closing()
    }

    fn envelopes(records: Vec<Record>) -> Vec<RecordEnvelope> {
        records
            .into_iter()
            .enumerate()
            .map(|(i, record)| RecordEnvelope {
                seq: i as u64 + 1,
                time: 0,
                record,
            })
            .collect()
    }

    fn answer_calling(ids: &[&str]) -> Record {
        Record::AssistantMessage(AssistantMessageRecord {
            turn: 1,
            step: 1,
            message: Message {
                role: Role::Assistant,
                content: ids
                    .iter()
                    .map(|id| Block::ToolCall {
                        id: (*id).to_owned(),
                        name: "bash".into(),
                        arguments: "{}".into(),
                    })
                    .collect(),
            },
            finish: FinishReason::ToolCalls,
            provider: "p".into(),
            model: "m".into(),
            usage: Usage::new(10, 1, 0, 0, 0),
        })
    }

    #[test]
    fn a_step_cut_after_a_review_bills_the_review_too() {
        let log = envelopes(vec![
            Record::TurnStart { turn: 1 },
            Record::StepStart { turn: 1, step: 1 },
            answer_calling(&["a"]),
            Record::AutoReview(dsh_protocol::AutoReviewRecord {
                turn: 1,
                call_id: "a".into(),
                tool: "bash".into(),
                decision: dsh_protocol::ReviewDecision::Allowed,
                reason: "fine".into(),
                model: "m".into(),
                overridden: false,
                usage: Usage::new(5, 2, 0, 0, 0),
            }),
        ]);
        let usage = repair(&log).into_iter().find_map(|r| match r {
            Record::StepEnd { usage, .. } => Some(usage),
            _ => None,
        });
        assert_eq!(usage.map(|u| u.total_tokens), Some(11 + 7));
    }

    #[test]
    fn a_closed_log_needs_nothing() {
        let log = envelopes(vec![
            Record::TurnStart { turn: 1 },
            Record::TurnEnd {
                turn: 1,
                reason: TurnEndReason::Completed,
            },
        ]);
        assert!(repair(&log).is_empty());
    }

    #[test]
    fn unanswered_calls_get_the_reference_results_then_the_step_and_turn_close() {
        let log = envelopes(vec![
            Record::TurnStart { turn: 1 },
            Record::StepStart { turn: 1, step: 1 },
            answer_calling(&["a", "b", "c"]),
            Record::ToolCall(ToolCallRecord {
                turn: 1,
                step: 1,
                call_id: "a".into(),
                name: "bash".into(),
                arguments: "{}".into(),
            }),
            Record::ToolCall(ToolCallRecord {
                turn: 1,
                step: 1,
                call_id: "b".into(),
                name: "bash".into(),
                arguments: "{}".into(),
            }),
        ]);
        let closing = repair(&log);
        assert_eq!(closing.len(), 5);
        let codes: Vec<&str> = closing
            .iter()
            .filter_map(|r| match r {
                Record::ToolResult(result) => result.error.as_ref().map(|e| e.code.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            codes,
            vec![
                "TOOL_OUTCOME_UNKNOWN",
                "TOOL_OUTCOME_UNKNOWN",
                "TOOL_NOT_STARTED"
            ]
        );
        // The answer was committed, so the step's usage is the answer's.
        assert!(matches!(
            &closing[3],
            Record::StepEnd { usage, .. } if usage.unreported_calls == 0 && usage.input_tokens == 10
        ));
        assert_eq!(
            closing[4],
            Record::TurnEnd {
                turn: 1,
                reason: TurnEndReason::Interrupted
            }
        );
    }

    #[test]
    fn a_step_killed_before_its_answer_is_closed_as_unreported() {
        let log = envelopes(vec![
            Record::TurnStart { turn: 3 },
            Record::StepStart { turn: 3, step: 2 },
        ]);
        let closing = repair(&log);
        assert!(matches!(
            &closing[0],
            Record::StepEnd { turn: 3, step: 2, usage } if usage.unreported_calls == 1
        ));
        assert!(matches!(&closing[1], Record::TurnEnd { turn: 3, .. }));
    }
}
