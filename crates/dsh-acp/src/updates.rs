//! What the client is told: the agent's events and a session log's records as ACP session
//! updates. Pure functions of what happened, so a live turn and a replayed log look alike.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    ResourceLink, SessionInfoUpdate, SessionUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use dsh_core::{AgentEvent, CallView, StreamDelta, ToolCatalog};
use dsh_protocol::{
    Block, Card, CardKind, Record, TodoItem, TodoStatus, Tone, ToolCallRecord, ToolOutputPart,
    ToolResultRecord, View,
};
use serde_json::Value;

/// The updates a live event makes. Answers and reasoning arrive as they stream, so the
/// finished assistant message adds nothing; a tool call is shown as it starts.
pub fn live(event: &AgentEvent, cwd: &Path, catalog: &ToolCatalog) -> Vec<SessionUpdate> {
    match event {
        AgentEvent::Delta(StreamDelta::Text(text)) => vec![agent_text(text)],
        AgentEvent::Delta(StreamDelta::Reasoning(text)) => vec![thought(text)],
        AgentEvent::Record(record) => match record.view() {
            View::Call(call) => {
                vec![tool_call(call, cwd, ToolCallStatus::InProgress, catalog)]
            }
            View::Result(result) => tool_results(result)
                .into_iter()
                .map(|(_, update)| update)
                .collect(),
            View::Todos { todos } => vec![plan(todos)],
            View::Card(card) => card_updates(&card),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The updates that show a session's history, for `session/load`: the user's messages, the
/// agent's answers and reasoning, each tool call with its result, the todo list.
pub fn replay(records: &[Record], cwd: &Path, catalog: &ToolCatalog) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    // A result must follow its call: a log repaired after a crash can hold results for calls
    // the model asked for (in its message) whose call records were never written.
    let mut announced = HashSet::new();
    let mut asked: HashMap<&str, ToolCallRecord> = HashMap::new();
    for record in records {
        match record.view() {
            View::User { message } => {
                for block in &message.content {
                    if let Block::Text { text } = block {
                        updates.push(SessionUpdate::UserMessageChunk(chunk(text)));
                    }
                }
            }
            View::Answer(assistant) => {
                for block in &assistant.message.content {
                    match block {
                        Block::ToolCall {
                            id,
                            name,
                            arguments,
                        } => {
                            let call = ToolCallRecord {
                                turn: assistant.turn,
                                step: assistant.step,
                                call_id: id.clone(),
                                name: name.clone(),
                                arguments: arguments.clone(),
                            };
                            asked.insert(id, call);
                        }
                        Block::Text { text } if !text.is_empty() => {
                            updates.push(agent_text(text));
                        }
                        Block::Reasoning {
                            text,
                            redacted: false,
                            ..
                        } if !text.is_empty() => updates.push(thought(text)),
                        _ => {}
                    }
                }
            }
            View::Call(call) => {
                announced.insert(call.call_id.clone());
                updates.push(tool_call(call, cwd, ToolCallStatus::Pending, catalog));
            }
            View::Result(result) => {
                for (id, update) in tool_results(result) {
                    if announced.insert(id.clone()) {
                        let call = asked.get(id.as_str()).cloned().unwrap_or(ToolCallRecord {
                            turn: result.turn,
                            step: result.step,
                            call_id: id,
                            name: "tool".to_owned(),
                            arguments: String::new(),
                        });
                        updates.push(tool_call(&call, cwd, ToolCallStatus::Pending, catalog));
                    }
                    updates.push(update);
                }
            }
            View::Todos { todos } => updates.push(plan(todos)),
            View::Card(card) => updates.extend(card_updates(&card)),
            _ => {}
        }
    }
    updates
}

/// A card as the editor shows it. What the model handed the user is in the answer: its title,
/// the file as a link the editor opens, then its body. ACP has no other cards, so the rest are
/// thoughts, which editors show aside; a routine one (a call the review allowed) is left out.
fn card_updates(card: &Card<'_>) -> Vec<SessionUpdate> {
    // The conversation needs no word of a title, but the editor's session list shows it.
    if let CardKind::Title(titled) = card.kind {
        let info = SessionInfoUpdate::new().title(titled.title.clone());
        return vec![SessionUpdate::SessionInfoUpdate(info)];
    }
    if card.routine {
        return Vec::new();
    }
    if card.tone != Tone::Handed {
        return vec![thought(&card.line())];
    }
    let mut updates = vec![agent_text(&format!("\n\n**{}**\n", card.headline))];
    if let Some(path) = card.path {
        let uri = url::Url::from_file_path(path)
            .map(String::from)
            .unwrap_or_else(|()| format!("file://{path}"));
        let link = ResourceLink::new(card.headline.clone(), uri);
        updates.push(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::ResourceLink(link),
        )));
    }
    if let Some(detail) = card.detail {
        updates.push(agent_text(&format!("\n{detail}\n")));
    }
    updates
}

fn chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

fn agent_text(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(chunk(text))
}

fn thought(text: &str) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(chunk(text))
}

/// A tool call as the editor shows it: a title in words, its kind (for the icon), the files
/// it touches (to follow along), and for a change the diff it asks for; all as the tool
/// describes itself ([`ToolCatalog::describe`]).
pub fn tool_call(
    call: &ToolCallRecord,
    cwd: &Path,
    status: ToolCallStatus,
    catalog: &ToolCatalog,
) -> SessionUpdate {
    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    let view = catalog.describe(&call.name, &args);
    let tool = ToolCall::new(call.call_id.clone(), view.title.clone())
        .kind(kind(view.kind))
        .status(status)
        .locations(locations(&view, cwd))
        .content(
            diff(&view, cwd)
                .into_iter()
                .chain(document(&view))
                .collect(),
        );
    SessionUpdate::ToolCall(tool.raw_input(args.clone()))
}

/// The calls a result answers, completed or failed, with what the tool returned: each call's
/// id and its update.
fn tool_results(result: &ToolResultRecord) -> Vec<(String, SessionUpdate)> {
    let mut updates = Vec::new();
    for block in &result.message.content {
        let Block::ToolResult {
            tool_call_id,
            content,
            is_error,
        } = block
        else {
            continue;
        };
        let failed = *is_error || result.error.is_some();
        let text: Vec<&str> = content
            .iter()
            .filter_map(|part| match part {
                ToolOutputPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let status = if failed {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Completed
        };
        let mut fields = ToolCallUpdateFields::new().status(status);
        if !text.is_empty() {
            let shown = ContentBlock::Text(TextContent::new(text.join("\n")));
            fields = fields.content(vec![ToolCallContent::Content(
                agent_client_protocol::v1::schema::Content::new(shown),
            )]);
        }
        if let Some(command) = &result.command {
            fields = fields.raw_output(serde_json::to_value(command).unwrap_or(Value::Null));
        }
        let update = ToolCallUpdate::new(tool_call_id.clone(), fields);
        updates.push((tool_call_id.clone(), SessionUpdate::ToolCallUpdate(update)));
    }
    updates
}

/// The todo list as the editor's plan. The list has no priorities; every entry is medium.
pub fn plan(todos: &[TodoItem]) -> SessionUpdate {
    let entries = todos
        .iter()
        .map(|todo| {
            let status = match todo.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(todo.content.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

/// dsh's kind of tool in ACP's vocabulary, which dsh's follows.
fn kind(kind: dsh_core::ToolKind) -> ToolKind {
    use dsh_core::ToolKind as Dsh;
    match kind {
        Dsh::Read => ToolKind::Read,
        Dsh::Edit => ToolKind::Edit,
        Dsh::Delete => ToolKind::Delete,
        Dsh::Move => ToolKind::Move,
        Dsh::Search => ToolKind::Search,
        Dsh::Execute => ToolKind::Execute,
        Dsh::Think => ToolKind::Think,
        Dsh::Fetch => ToolKind::Fetch,
        Dsh::SwitchMode => ToolKind::SwitchMode,
        Dsh::Other => ToolKind::Other,
    }
}

/// A path argument made absolute against the session's folder, as editors want them.
fn absolute(path: &str, cwd: &Path) -> PathBuf {
    cwd.join(path)
}

fn locations(view: &CallView<'_>, cwd: &Path) -> Vec<ToolCallLocation> {
    match view.path {
        Some(path) => vec![ToolCallLocation::new(absolute(path, cwd)).line(view.line)],
        None => Vec::new(),
    }
}

/// A document the call carries (a submitted plan), for the editor to show whole.
fn document(view: &CallView<'_>) -> Option<ToolCallContent> {
    let text = ContentBlock::Text(TextContent::new(view.document?.to_owned()));
    Some(ToolCallContent::Content(
        agent_client_protocol::v1::schema::Content::new(text),
    ))
}

/// The change a call asks for: an edit's replaced text and its replacement, a write's whole
/// content (the file's earlier content is not read here: the call may already have run by
/// the time its event is told). An insert, a piece with no whole to show it in, has none.
fn diff(view: &CallView<'_>, cwd: &Path) -> Option<ToolCallContent> {
    let change = view.change?;
    if change.old.is_none() && !change.whole_file {
        return None;
    }
    let diff =
        Diff::new(absolute(change.path, cwd), change.new).old_text(change.old.map(str::to_owned));
    Some(ToolCallContent::Diff(diff))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::{Message, Role};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn call(name: &str, args: Value) -> ToolCallRecord {
        ToolCallRecord {
            turn: 1,
            step: 1,
            call_id: "call-1".into(),
            name: name.into(),
            arguments: args.to_string(),
        }
    }

    /// The file and shell tools, as a run with them describes them.
    pub(super) fn catalog() -> ToolCatalog {
        let mut tools = dsh_tools::ToolRegistry::with_file_tools(true);
        tools.add_shell_tools(true);
        tools.catalog()
    }

    fn wire(update: &SessionUpdate) -> Value {
        serde_json::to_value(update).unwrap_or_default()
    }

    #[test]
    fn an_edit_is_shown_as_a_diff_at_its_absolute_path() {
        let update = tool_call(
            &call(
                "edit",
                json!({"file_path": "src/a.rs", "old_string": "x", "new_string": "y"}),
            ),
            Path::new("/work"),
            ToolCallStatus::InProgress,
            &catalog(),
        );
        let shown = wire(&update);
        assert_eq!(shown["sessionUpdate"], "tool_call");
        assert_eq!(shown["title"], "Edit src/a.rs");
        assert_eq!(shown["kind"], "edit");
        assert_eq!(shown["status"], "in_progress");
        assert_eq!(shown["locations"], json!([{"path": "/work/src/a.rs"}]));
        assert_eq!(
            shown["content"],
            json!([{"type": "diff", "path": "/work/src/a.rs", "oldText": "x", "newText": "y"}])
        );
    }

    #[test]
    fn a_command_is_run_with_its_text_as_title_and_no_location() {
        let shown = wire(&tool_call(
            &call("bash", json!({"command": "cargo test"})),
            Path::new("/work"),
            ToolCallStatus::InProgress,
            &catalog(),
        ));
        assert_eq!(shown["title"], "Run cargo test");
        assert_eq!(shown["kind"], "execute");
        assert!(shown.get("locations").is_none_or(|l| l == &json!([])));
    }

    #[test]
    fn a_malformed_call_still_gets_a_title() {
        let record = ToolCallRecord {
            arguments: "{not json".into(),
            ..call("read", Value::Null)
        };
        let shown = wire(&tool_call(
            &record,
            Path::new("/w"),
            ToolCallStatus::Pending,
            &catalog(),
        ));
        assert_eq!(shown["title"], "Read");
    }

    #[test]
    fn a_failed_result_fails_its_call_with_the_text_the_model_read() {
        let result = ToolResultRecord {
            turn: 1,
            step: 1,
            message: Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_call_id: "call-1".into(),
                    content: vec![ToolOutputPart::Text {
                        text: "file not found".into(),
                    }],
                    is_error: true,
                }],
            },
            error: None,
            command: None,
        };
        let updates = tool_results(&result);
        let shown = wire(&updates[0].1);
        assert_eq!(shown["sessionUpdate"], "tool_call_update");
        assert_eq!(shown["toolCallId"], "call-1");
        assert_eq!(shown["status"], "failed");
        assert_eq!(shown["content"][0]["content"]["text"], "file not found");
    }

    #[test]
    fn the_todo_list_is_the_plan() {
        let todos = [
            TodoItem {
                content: "read".into(),
                status: TodoStatus::Completed,
            },
            TodoItem {
                content: "fix".into(),
                status: TodoStatus::InProgress,
            },
        ];
        assert_eq!(
            wire(&plan(&todos))["entries"],
            json!([
                {"content": "read", "priority": "medium", "status": "completed"},
                {"content": "fix", "priority": "medium", "status": "in_progress"}
            ])
        );
    }
}

#[cfg(test)]
mod replay_tests {
    use super::*;
    use dsh_protocol::{AssistantMessageRecord, FinishReason, Message, Role, Usage};
    use pretty_assertions::assert_eq;

    #[test]
    fn a_result_whose_call_was_never_logged_is_announced_first() {
        let asked = Record::AssistantMessage(AssistantMessageRecord {
            turn: 1,
            step: 1,
            message: Message {
                role: Role::Assistant,
                content: vec![Block::ToolCall {
                    id: "call-9".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"make"}"#.into(),
                }],
            },
            finish: FinishReason::ToolCalls,
            provider: "deepseek".into(),
            model: "m".into(),
            usage: Usage::default(),
        });
        let repaired = Record::ToolResult(ToolResultRecord {
            turn: 1,
            step: 1,
            message: Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_call_id: "call-9".into(),
                    content: vec![ToolOutputPart::Text {
                        text: "interrupted".into(),
                    }],
                    is_error: true,
                }],
            },
            error: None,
            command: None,
        });
        let updates = replay(
            &[asked, repaired],
            Path::new("/w"),
            &super::tests::catalog(),
        );
        let shown: Vec<Value> = updates
            .iter()
            .map(|u| serde_json::to_value(u).unwrap_or_default())
            .collect();
        assert_eq!(shown.len(), 2);
        assert_eq!(shown[0]["sessionUpdate"], "tool_call");
        assert_eq!(shown[0]["title"], "Run make");
        assert_eq!(shown[1]["sessionUpdate"], "tool_call_update");
        assert_eq!(shown[1]["toolCallId"], "call-9");
    }

    /// A session's history shows every record kind, but the marks and the mode (which ACP
    /// has no place for) and what is hidden on purpose; every card is a thought but what was
    /// handed to the user, which is in the answer.
    #[test]
    fn every_record_kind_is_replayed() {
        for record in dsh_protocol::view::samples() {
            let updates = replay(
                std::slice::from_ref(&record),
                Path::new("/w"),
                &super::tests::catalog(),
            );
            let view = record.view();
            let silent = matches!(
                view,
                View::Hidden { .. }
                    | View::Mode(_)
                    | View::TurnStart { .. }
                    | View::StepStart { .. }
                    | View::StepEnd { .. }
                    | View::TurnEnd { .. }
            ) || matches!(&view, View::Card(card)
                if card.routine && !matches!(card.kind, CardKind::Title(_)));
            assert_eq!(updates.is_empty(), silent, "{record:?}: {updates:?}");
            if let View::Card(card) = view
                && !silent
            {
                let kind = serde_json::to_value(&updates[0]).unwrap()["sessionUpdate"].clone();
                let expected = match (&card.kind, card.tone) {
                    (CardKind::Title(_), _) => "session_info_update",
                    (_, Tone::Handed) => "agent_message_chunk",
                    _ => "agent_thought_chunk",
                };
                assert_eq!(kind, expected, "{record:?}");
            }
        }
    }
}
