//! The `--json` event stream: one JSON object per line on stdout.
//!
//! Events are projections of committed [`Record`]s (so a discarded attempt never reaches the
//! stream), plus the opening `session`, the closing `final` and `error`. Every line except
//! `final` goes through [`bound_line`], which keeps a line within 32 KiB the way the reference
//! does: strings and keys cut at 8 KiB, nesting cut at depth 64, then structured fields dropped.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::view::{CardKind, View};
use crate::{Block, ErrorInfo, Record, TurnEndReason, Usage};

/// Longest string or object key kept, in UTF-8 bytes.
pub const MAX_STRING_BYTES: usize = 8 * 1024;
/// Longest line written, newline included, in bytes.
pub const MAX_LINE_BYTES: usize = 32 * 1024;
/// Containers nested this deep or deeper are replaced by a marker string.
pub const MAX_DEPTH: usize = 64;

/// The version of the `--json` stream's format, named by its first event. Fields may be added
/// within a version; a change that removes or redefines one takes a new version.
pub const STREAM_SCHEMA_VERSION: u32 = 1;

/// One line of the `--json` stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// Always first: the identity of the session this run drives.
    #[serde(rename_all = "camelCase")]
    Session {
        session_id: String,
        cwd: String,
        /// [`STREAM_SCHEMA_VERSION`].
        schema_version: u32,
    },
    Status(Status),
    /// A reasoning block of a committed assistant message.
    Thinking {
        text: String,
    },
    /// A text block of a committed assistant message.
    Text {
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCall {
        call_id: String,
        tool: String,
        input: Value,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        call_id: String,
        status: ToolResultStatus,
        result: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ErrorInfo>,
        /// For `bash`: how the command ended (exit code, signal, timeout, job, truncation).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<crate::CommandOutcome>,
    },
    /// The model's task list, whole, each time `todo_write` changes it.
    Todo {
        todos: Vec<crate::TodoItem>,
    },
    /// The session's goal after each change, and at the start of each automatic round toward
    /// it (`operation` is `round`, `goal.roundsStarted` the round's number).
    Goal {
        operation: crate::GoalOperation,
        goal: crate::Goal,
    },
    /// Something finished the model hands the user to look at (`present`): a file, a
    /// summary, or both.
    Present {
        title: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
    /// An event of a subagent's run, tagged with its id (never mixed into the parent's own
    /// events).
    #[serde(rename_all = "camelCase")]
    Agent {
        agent_id: String,
        event: Box<StreamEvent>,
    },
    /// Always last on a run that reached the agent: the answer, how the last turn ended (`null`
    /// when it never ended) and the usage of every request the run sent. Never cut.
    #[serde(rename_all = "camelCase")]
    Final {
        session_id: String,
        reason: Option<TurnEndReason>,
        text: String,
        usage: Usage,
        /// Milliseconds from the start of the run (before its set-up) to this event.
        duration_ms: u64,
        /// The model requests the run's top agent made (`step_end` events).
        steps: u32,
        /// Under `--output-schema`: the answer's JSON, valid against the schema.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured_output: Option<serde_json::Value>,
    },
    /// A failure outside a turn (bad arguments, no credentials, an unusable session); the stream
    /// then ends without `final`.
    Error {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
}

/// Turn and step boundaries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Status {
    TurnStart { turn: u32 },
    StepStart { turn: u32, step: u32 },
    StepEnd { turn: u32, step: u32, usage: Usage },
    TurnEnd { turn: u32, reason: TurnEndReason },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolResultStatus {
    Completed,
    Error,
}

/// The events a committed record produces, in order: its [`View`] in the reference's events.
/// The stream is a format programs parse, so a view the reference has no event for is left
/// out here (the log and `dsh sessions show` have it), each for the reason beside it.
pub fn project(record: &Record) -> Vec<StreamEvent> {
    match record.view() {
        View::TurnStart { turn } => vec![StreamEvent::Status(Status::TurnStart { turn })],
        View::StepStart { turn, step } => {
            vec![StreamEvent::Status(Status::StepStart { turn, step })]
        }
        View::StepEnd { turn, step, usage } => vec![StreamEvent::Status(Status::StepEnd {
            turn,
            step,
            usage: *usage,
        })],
        View::TurnEnd { turn, reason } => vec![StreamEvent::Status(Status::TurnEnd {
            turn,
            reason: reason.clone(),
        })],
        View::Todos { todos } => vec![StreamEvent::Todo {
            todos: todos.to_vec(),
        }],
        View::Card(card) => match card.kind {
            CardKind::Present => vec![StreamEvent::Present {
                title: card.headline,
                path: card.path.map(str::to_owned),
                summary: card.detail.map(str::to_owned),
            }],
            CardKind::Goal(change) => vec![StreamEvent::Goal {
                operation: change.operation,
                goal: change.goal.clone(),
            }],
            // A fork's inherited history happened before; how a subagent ended is in its
            // events and in the result of the call that ran it.
            CardKind::Fork { .. } | CardKind::Subagent(_) => Vec::new(),
            // A denial or a failed review reaches the stream as its call's
            // `tool_result.error`; the review's usage is in the step's `step_end`.
            CardKind::Review => Vec::new(),
            // Compaction changes what the model is sent, not what happened; its request's
            // usage is in the step's `step_end`. A rewind is the workspace's bookkeeping, and
            // instructions are the model's input, not the run's output.
            CardKind::Compaction(_) | CardKind::Rewind | CardKind::Instructions => Vec::new(),
            // A title names the session for its lists; its request's usage is in the run's
            // `final` (the reference has no event for it).
            CardKind::Title(_) => Vec::new(),
        },
        // The task is the supervisor's own; the mode is the run's setting, as its
        // `--dump-config` shows it.
        View::User { .. } | View::Mode(_) | View::Hidden { .. } => Vec::new(),
        View::Answer(answer) => (answer.message.content.iter())
            .filter_map(|block| match block {
                Block::Reasoning { text, .. } if !text.is_empty() => {
                    Some(StreamEvent::Thinking { text: text.clone() })
                }
                Block::Text { text } if !text.is_empty() => {
                    Some(StreamEvent::Text { text: text.clone() })
                }
                _ => None,
            })
            .collect(),
        View::Call(call) => vec![StreamEvent::ToolCall {
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            input: tool_input(&call.arguments),
        }],
        View::Result(result) => (result.message.content.iter())
            .filter_map(|block| match block {
                Block::ToolResult {
                    tool_call_id,
                    content,
                    is_error,
                } => Some(StreamEvent::ToolResult {
                    call_id: tool_call_id.clone(),
                    status: if *is_error {
                        ToolResultStatus::Error
                    } else {
                        ToolResultStatus::Completed
                    },
                    result: content.iter().map(crate::ToolOutputPart::text).collect(),
                    error: result.error.clone(),
                    command: result.command.clone(),
                }),
                _ => None,
            })
            .collect(),
    }
}

/// Tool arguments as the executor reads them: empty text is `{}`, and text that is not JSON (or
/// holds a number JSON cannot represent, such as `1e400`) stays the raw string.
pub fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return Value::Object(Map::new());
    }
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

/// Serialises an event as one bounded line (without its newline). `final` is never cut.
pub fn bound_line(event: &StreamEvent) -> String {
    // Serialising our own types cannot fail; an empty object is still a valid line.
    let Ok(value) = serde_json::to_value(event) else {
        return "{}".to_owned();
    };
    if matches!(event, StreamEvent::Final { .. }) {
        return value.to_string();
    }
    bound_value_line(value)
}

/// The bounding pipeline on an arbitrary event object.
pub fn bound_value_line(value: Value) -> String {
    let mut truncated = false;
    let mut value = bound(value, 0, &mut truncated);
    if truncated && let Value::Object(map) = &mut value {
        map.insert("truncated".into(), Value::Bool(true));
    }
    let line = value.to_string();
    if line.len() < MAX_LINE_BYTES {
        return line;
    }
    let Value::Object(map) = value else {
        return line;
    };
    let event_type = map.get("type").cloned().unwrap_or(Value::Null);
    let mut scalars: Map<String, Value> = map
        .into_iter()
        .filter(|(_, v)| !v.is_object() && !v.is_array())
        .collect();
    scalars.insert("truncated".into(), Value::Bool(true));
    let line = Value::Object(scalars).to_string();
    if line.len() < MAX_LINE_BYTES {
        return line;
    }
    let mut minimal = Map::new();
    minimal.insert("type".into(), event_type);
    minimal.insert("truncated".into(), Value::Bool(true));
    Value::Object(minimal).to_string()
}

fn bound(value: Value, depth: usize, truncated: &mut bool) -> Value {
    match value {
        Value::String(text) => Value::String(cut_string(text, truncated)),
        Value::Array(items) => {
            if depth >= MAX_DEPTH {
                *truncated = true;
                return Value::String("[truncated: depth]".into());
            }
            Value::Array(
                items
                    .into_iter()
                    .map(|v| bound(v, depth + 1, truncated))
                    .collect(),
            )
        }
        Value::Object(map) => {
            if depth >= MAX_DEPTH {
                *truncated = true;
                return Value::String("[truncated: depth]".into());
            }
            Value::Object(
                map.into_iter()
                    .map(|(k, v)| (cut_string(k, truncated), bound(v, depth + 1, truncated)))
                    .collect(),
            )
        }
        scalar => scalar,
    }
}

fn cut_string(mut text: String, truncated: &mut bool) -> String {
    if text.len() > MAX_STRING_BYTES {
        let mut end = MAX_STRING_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        *truncated = true;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn small_events_pass_unchanged() {
        let line = bound_line(&StreamEvent::Text {
            text: "answer".into(),
        });
        assert_eq!(line, r#"{"type":"text","text":"answer"}"#);
    }

    #[test]
    fn long_strings_are_cut_on_a_character_boundary_and_flagged() {
        let text = "é".repeat(MAX_STRING_BYTES); // 2 bytes each
        let line = bound_line(&StreamEvent::Text { text });
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["truncated"], Value::Bool(true));
        assert_eq!(value["text"].as_str().unwrap().len(), MAX_STRING_BYTES);
    }

    #[test]
    fn over_long_lines_keep_only_scalar_fields() {
        let big: Vec<Value> = (0..20_000i64).map(|i| Value::from(i * 1_000_003)).collect();
        let line = bound_line(&StreamEvent::ToolCall {
            call_id: "c".into(),
            tool: "bash".into(),
            input: Value::Array(big),
        });
        assert_eq!(
            line,
            r#"{"type":"tool_call","callId":"c","tool":"bash","truncated":true}"#
        );
    }

    #[test]
    fn deep_nesting_is_cut_at_depth_64() {
        let mut input = Value::from(1);
        for _ in 0..100 {
            input = Value::Array(vec![input]);
        }
        let line = bound_line(&StreamEvent::ToolCall {
            call_id: "c".into(),
            tool: "t".into(),
            input,
        });
        assert!(line.contains("[truncated: depth]"));
        assert!(line.ends_with(r#","truncated":true}"#));
    }

    #[test]
    fn final_is_never_cut() {
        let text = "x".repeat(100_000);
        let line = bound_line(&StreamEvent::Final {
            session_id: "s".into(),
            reason: Some(TurnEndReason::Completed),
            text: text.clone(),
            usage: Usage::default(),
            duration_ms: 0,
            steps: 0,
            structured_output: None,
        });
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["text"].as_str().unwrap(), text);
    }

    #[test]
    fn tool_input_follows_the_executor() {
        assert_eq!(tool_input(""), Value::Object(Map::new()));
        assert_eq!(tool_input("{oops"), Value::String("{oops".into()));
        assert_eq!(
            tool_input(r#"{"n":1e400}"#),
            Value::String(r#"{"n":1e400}"#.into())
        );
        assert_eq!(tool_input(r#"{"a":1}"#)["a"], Value::from(1));
    }
}
