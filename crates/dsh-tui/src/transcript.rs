//! What the session's records look like in the scrollback: each record's view
//! ([`Record::view`]) that a person wants to read becomes a cell of styled lines (a message, a
//! tool call with its diff, a result with its exit status, the todo list, a turn's end, a
//! card). Resumed sessions go through the same path.

use std::collections::HashMap;

use dsh_protocol::{
    AbortReason, Block, Card, CardKind, Goal, GoalOperation, Message, Record, TodoItem, TodoStatus,
    Tone, ToolResultRecord, TurnEndReason, Usage, View,
};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::diff::change_diff;
use crate::markdown;

/// The lines of a bash result the scrollback keeps (its tail); the log has all of it.
pub const BASH_TAIL: usize = 12;
/// The lines of other results shown.
const RESULT_HEAD: usize = 3;

const DIM: Style = Style::new().fg(Color::DarkGray);
const RED: Style = Style::new().fg(Color::Red);

/// Turns records into cells, remembering what a later record needs (which call a result
/// answers, what the turn billed).
#[derive(Default)]
pub struct Transcript {
    /// Tool calls waiting for their result: name and parsed arguments.
    calls: HashMap<String, (String, Value)>,
    /// The turn so far: steps and usage.
    steps: u32,
    usage: Usage,
    /// Whether reasoning is written in full (else one line says it was there).
    pub show_reasoning: bool,
    /// The latest task list.
    pub todos: Vec<TodoItem>,
    /// The session's goal, as its latest change left it.
    pub goal: Option<Goal>,
    /// Whether the turn under way is an automatic round toward the goal.
    in_goal_round: bool,
    /// Whether the next user message is dsh's own (a round's prompt, or what the model is told
    /// after ending the goal), which the goal's line already stands for.
    goal_prompt_next: bool,
    /// Everything the session billed that the transcript has seen.
    pub session_usage: Usage,
    /// The session's tools, as its calls are shown.
    pub catalog: dsh_core::ToolCatalog,
}

impl Transcript {
    /// The cell for `record`, if it shows as one: its view, drawn.
    pub fn cell(&mut self, record: &Record) -> Option<Vec<Line<'static>>> {
        match record.view() {
            View::TurnStart { .. } => {
                self.steps = 0;
                self.usage = Usage::default();
                None
            }
            View::User { .. } if std::mem::take(&mut self.goal_prompt_next) => None,
            View::User { message } => {
                // Images attached in the web app, named where the terminal cannot show them.
                let mut text = message.text();
                for block in &message.content {
                    if let dsh_protocol::Block::Image { image } = block {
                        text.push('\n');
                        text.push_str(&image.summary());
                    }
                }
                // dsh's own restatement of the goal after a summary: a note, not the user's.
                if text.starts_with(dsh_core::GOAL_RESTATED) {
                    return Some(vec![Line::styled(
                        "· the goal was restated to the model after the summary",
                        DIM,
                    )]);
                }
                // A command the user ran with `!`: shown as the command and its output.
                if let Some((command, output)) = dsh_core::user_shell::read(&text) {
                    return Some(shell_cell(command, output));
                }
                Some(user_cell(&text))
            }
            View::Answer(answer) => {
                let cell = self.assistant_cell(&answer.message);
                (!cell.is_empty()).then_some(cell)
            }
            View::Call(call) => {
                let args = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                let cell = call_cell(&call.name, &self.catalog.describe(&call.name, &args));
                self.calls
                    .insert(call.call_id.clone(), (call.name.clone(), args));
                Some(cell)
            }
            View::Result(result) => Some(self.result_cell(result)),
            View::StepEnd { usage, .. } => {
                self.steps += 1;
                self.usage.add(usage);
                self.session_usage.add(usage);
                None
            }
            View::TurnEnd { reason, .. } => {
                self.in_goal_round = false;
                // A `!` command's turn made no request: its exit status says how it ended.
                let quiet = self.steps == 0 && reason.is_completed();
                let cell = self.turn_end_cell(reason);
                (!quiet).then_some(cell)
            }
            View::Todos { todos } => {
                self.todos = todos.to_vec();
                Some(todo_cell(todos))
            }
            View::Card(card) => {
                self.keep(&card.kind);
                // A call the review allowed needs no word.
                if let CardKind::Compaction(summary) = &card.kind {
                    return Some(compaction_cell(&card, summary));
                }
                (!card.routine).then(|| card_cell(&card))
            }
            // The status line says the mode the session runs under.
            View::Mode(_) | View::StepStart { .. } | View::Hidden { .. } => None,
        }
    }

    /// What the transcript keeps of a card: the goal, and what a compaction the user asked
    /// for and a title request billed outside any step.
    fn keep(&mut self, kind: &CardKind<'_>) {
        match kind {
            CardKind::Goal(change) => {
                match change.operation {
                    GoalOperation::Round => {
                        self.in_goal_round = true;
                        self.goal_prompt_next = true;
                    }
                    GoalOperation::Complete | GoalOperation::Block => {
                        self.goal_prompt_next = self.in_goal_round;
                    }
                    _ => {}
                }
                self.goal = Some(change.goal.clone());
            }
            CardKind::Compaction(summary) if summary.reason == "manual" => {
                self.session_usage.add(&summary.usage);
            }
            // The title request comes after its turn ended, outside any step.
            CardKind::Title(titled) => self.session_usage.add(&titled.usage),
            _ => {}
        }
    }

    fn assistant_cell(&self, message: &Message) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        for block in &message.content {
            match block {
                Block::Reasoning { text, .. } if !text.trim().is_empty() => {
                    if self.show_reasoning {
                        lines.extend(text.lines().map(|l| {
                            Line::styled(l.to_owned(), DIM.add_modifier(Modifier::ITALIC))
                        }));
                    } else {
                        let count = text.lines().count();
                        let plural = if count == 1 { "" } else { "s" };
                        lines.push(Line::styled(
                            format!("· thought for {count} line{plural} (Ctrl-T shows reasoning)"),
                            DIM.add_modifier(Modifier::ITALIC),
                        ));
                    }
                }
                Block::Text { text } if !text.trim().is_empty() => {
                    lines.extend(markdown::render(text));
                }
                _ => {}
            }
        }
        if !lines.is_empty() {
            lines.insert(0, Line::default());
        }
        lines
    }

    fn result_cell(&mut self, result: &ToolResultRecord) -> Vec<Line<'static>> {
        let (call_id, text, is_error) = result_parts(&result.message);
        let name = self
            .calls
            .remove(&call_id)
            .map(|(name, _)| name)
            .unwrap_or_default();
        if is_error {
            let mut lines: Vec<Line<'static>> = text
                .lines()
                .take(RESULT_HEAD)
                .map(|l| Line::styled(format!("  ✗ {l}"), Style::new().fg(Color::Red)))
                .collect();
            if lines.is_empty() {
                lines.push(Line::styled("  ✗ failed", Style::new().fg(Color::Red)));
            }
            return lines;
        }
        match name.as_str() {
            "bash" => bash_result(&text),
            "todo_write" => Vec::new(),
            // What the model read is in the log; the person needs how much: the numbered
            // lines of the window.
            "read" => {
                let lines = text
                    .lines()
                    .filter(|l| {
                        l.split_once(": ")
                            .is_some_and(|(n, _)| n.parse::<u64>().is_ok())
                    })
                    .count();
                vec![Line::styled(
                    format!("  │ {lines} line{}", if lines == 1 { "" } else { "s" }),
                    DIM,
                )]
            }
            _ => {
                let all: Vec<&str> = text.lines().collect();
                let mut lines: Vec<Line<'static>> = all
                    .iter()
                    .take(RESULT_HEAD)
                    .map(|l| Line::styled(format!("  │ {l}"), DIM))
                    .collect();
                if all.len() > RESULT_HEAD {
                    lines.push(Line::styled(
                        format!("  │ … {} more lines", all.len() - RESULT_HEAD),
                        DIM,
                    ));
                }
                lines
            }
        }
    }

    fn turn_end_cell(&mut self, reason: &TurnEndReason) -> Vec<Line<'static>> {
        let summary = format!(
            "{} step{} · {} tokens",
            self.steps,
            if self.steps == 1 { "" } else { "s" },
            tokens(self.usage.total_tokens)
        );
        let (text, style) = match reason {
            TurnEndReason::Completed | TurnEndReason::PlanSubmitted => {
                (format!("─ {summary}"), DIM)
            }
            TurnEndReason::Aborted {
                reason: AbortReason::User,
            } => (
                format!("■ interrupted · {summary}"),
                Style::new().fg(Color::Yellow),
            ),
            TurnEndReason::Aborted { .. } => (
                format!("■ stopped · {summary}"),
                Style::new().fg(Color::Yellow),
            ),
            TurnEndReason::Error { error } => (
                format!("✗ {}: {} · {summary}", error.code, error.message),
                Style::new().fg(Color::Red),
            ),
            TurnEndReason::MaxTokens => (
                format!("■ the answer was cut at the output token limit · {summary}"),
                Style::new().fg(Color::Yellow),
            ),
            TurnEndReason::MaxTurns { message }
            | TurnEndReason::MaxBudget { message }
            | TurnEndReason::Timeout { message }
            | TurnEndReason::OutputSchema { message } => (
                format!("■ {message} · {summary}"),
                Style::new().fg(Color::Yellow),
            ),
            TurnEndReason::Interrupted => (
                "■ this turn was cut short when dsh stopped".to_owned(),
                Style::new().fg(Color::Yellow),
            ),
        };
        vec![Line::styled(text, style)]
    }
}

/// The tool result block's call id, text and error flag.
fn result_parts(message: &Message) -> (String, String, bool) {
    for block in &message.content {
        if let Block::ToolResult {
            tool_call_id,
            content,
            is_error,
        } = block
        {
            let text = content
                .iter()
                .map(dsh_protocol::ToolOutputPart::text)
                .collect::<Vec<_>>()
                .join("\n");
            return (tool_call_id.clone(), text, *is_error);
        }
    }
    (String::new(), String::new(), false)
}

/// A message the user sent.
pub fn user_cell(text: &str) -> Vec<Line<'static>> {
    let mut lines = vec![Line::default()];
    for (i, line) in text.lines().enumerate() {
        let prefix = if i == 0 { "› " } else { "  " };
        lines.push(Line::from(vec![
            Span::styled(
                prefix,
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            ),
            Span::styled(line.to_owned(), Style::new().add_modifier(Modifier::BOLD)),
        ]));
    }
    lines
}

fn call_cell(name: &str, view: &dsh_core::CallView<'_>) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(vec![
        Span::styled("⏺ ", Style::new().fg(Color::Green)),
        Span::styled(name.to_owned(), Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(" "),
        Span::styled(view.summary.clone(), Style::new().fg(Color::Gray)),
    ])];
    if let Some(change) = &view.change {
        lines.extend(change_diff(change));
    }
    // A document the call carries (a submitted plan) is read whole, not as a summary.
    if let Some(document) = view.document {
        lines.extend(markdown::render(document));
    }
    lines
}

/// A bash result: the output's tail, then how it ended in its colour: the reference's markers
/// (`[timed out after Nms]`, `[killed by signal: X]`, `[exit code: N]`) close the text, and a
/// clean exit has none. A command moved to a background job has not ended.
/// A running call's output as the live area shows it: what a progress meter shows last
/// (after its last `\r`), one row a line, blank lines left out.
pub fn shown_lines(output: &str) -> Vec<&str> {
    (output.lines())
        .map(|l| l.rsplit('\r').next().unwrap_or(l))
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// What was watched of a call's output (its last lines), for the transcript.
pub fn watched_output(output: &str) -> Vec<Line<'static>> {
    let lines = shown_lines(output);
    let start = lines.len().saturating_sub(BASH_TAIL);
    let mut cell: Vec<Line<'static>> = Vec::new();
    if start > 0 {
        cell.push(Line::styled("  │ …", DIM));
    }
    cell.extend(
        lines[start..]
            .iter()
            .map(|l| Line::styled(format!("  │ {l}"), DIM)),
    );
    cell
}

/// `!command` as the user typed it, then its output and exit status as a `bash` call's.
fn shell_cell(command: &str, output: &str) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::default(),
        Line::from(vec![
            Span::styled("! ", Style::new().fg(Color::Magenta)),
            Span::styled(
                command.to_owned(),
                Style::new().add_modifier(Modifier::BOLD),
            ),
        ]),
    ];
    // Refused before it ran (plan mode, no bash tool in the run): the error, in red.
    if output.starts_with("Error: ") {
        (output.lines()).for_each(|l| lines.push(Line::styled(format!("  ✗ {l}"), RED)));
    } else {
        lines.extend(bash_result(output));
    }
    lines
}

fn bash_result(output: &str) -> Vec<Line<'static>> {
    let mut body: Vec<&str> = output.lines().collect();
    let mut markers = Vec::new();
    while let Some(last) = body.last() {
        let marker = ["[exit code: ", "[killed by signal: ", "[timed out after "]
            .iter()
            .any(|m| last.starts_with(m) && last.ends_with(']'));
        if !marker {
            break;
        }
        let marker = last.trim_matches(['[', ']']);
        markers.insert(0, marker.replace("exit code: ", "exit "));
        body.pop();
    }
    let backgrounded =
        output.contains("moved to background job") || output.starts_with("started background job");
    while body.last().is_some_and(|l| l.trim().is_empty()) {
        body.pop();
    }
    let mut lines = Vec::new();
    if body.len() > BASH_TAIL {
        lines.push(Line::styled(
            format!("  │ … {} earlier lines", body.len() - BASH_TAIL),
            DIM,
        ));
    }
    let start = body.len().saturating_sub(BASH_TAIL);
    lines.extend(
        body[start..]
            .iter()
            .map(|l| Line::styled(format!("  │ {l}"), DIM)),
    );
    if backgrounded {
        return lines;
    }
    let status = if markers.is_empty() {
        Line::styled("  └ exit 0", Style::new().fg(Color::Green))
    } else {
        Line::styled(
            format!("  └ {}", markers.join(", ")),
            Style::new().fg(Color::Red),
        )
    };
    lines.push(status);
    lines
}

/// The task list, as the scrollback shows it when it changes.
pub fn todo_cell(todos: &[TodoItem]) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(
        "  Todo",
        Style::new().add_modifier(Modifier::BOLD),
    )];
    for todo in todos {
        let (mark, style) = match todo.status {
            TodoStatus::Completed => ("☑", DIM.add_modifier(Modifier::CROSSED_OUT)),
            TodoStatus::InProgress => ("◐", Style::new().fg(Color::Yellow)),
            TodoStatus::Pending => ("☐", Style::default()),
        };
        lines.push(Line::styled(format!("  {mark} {}", todo.content), style));
    }
    lines
}

/// A card: its icon and headline in its tone's colour, the file it is about, and its body as
/// markdown.
pub fn card_cell(card: &Card<'_>) -> Vec<Line<'static>> {
    let style = match card.tone {
        Tone::Quiet => DIM,
        Tone::Accent => Style::new().fg(Color::Cyan),
        Tone::Handed => Style::new().fg(Color::Green).add_modifier(Modifier::BOLD),
        Tone::Warning => Style::new().fg(Color::Yellow),
        Tone::Failure => Style::new().fg(Color::Red),
    };
    let mut lines = vec![Line::styled(
        format!("{} {}", card.icon, card.headline),
        style,
    )];
    if let Some(path) = card.path {
        lines.push(Line::styled(
            format!("  {path}"),
            Style::new().fg(Color::Cyan),
        ));
    }
    if let Some(detail) = card.detail {
        lines.extend(markdown::render(detail));
    }
    lines
}

/// A compaction: when and how much (the card's headline), what was summarised, and what
/// the model still has as it was.
fn compaction_cell(
    card: &Card<'_>,
    summary: &dsh_protocol::CompactionSummaryRecord,
) -> Vec<Line<'static>> {
    let mut lines = card_cell(card);
    if let Some(note) = &card.note {
        lines.push(Line::styled(format!("  {note}"), DIM));
    }
    let when = if summary.reason == "manual" {
        "with your next message"
    } else {
        "before its next request"
    };
    lines.push(Line::styled(
        format!(
            "  kept as they were: the messages after those {}; the workspace instructions and \
             the goal, if any, are given to the model again {when}",
            summary.replaced
        ),
        DIM,
    ));
    lines
}

/// A token count for people: 950, 12.3k, 1.2M.
pub fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::plain;

    /// Every record kind shows in the scrollback, but the marks whose counts the turn's end
    /// shows, the mode the status line shows, routine cards (the session's title, which the
    /// picker shows) and what is hidden on purpose.
    #[test]
    fn every_record_kind_shows_as_a_cell() {
        let mut transcript = Transcript::default();
        for record in dsh_protocol::view::samples() {
            let view = record.view();
            let silent = matches!(
                view,
                View::Hidden { .. }
                    | View::Mode(_)
                    | View::TurnStart { .. }
                    | View::StepStart { .. }
                    | View::StepEnd { .. }
            ) || matches!(&view, View::Card(card) if card.routine);
            let cell = transcript.cell(&record);
            assert_eq!(cell.is_none(), silent, "{record:?}: {cell:?}");
        }
    }

    #[test]
    fn cards_are_drawn_alike_whatever_they_are_about() {
        let mut transcript = Transcript::default();
        let shown: Vec<String> = (dsh_protocol::view::samples().iter())
            .filter(|r| matches!(r.view(), View::Card(_)))
            .filter_map(|r| transcript.cell(r))
            .map(|cell| plain(&cell))
            .collect();
        assert_eq!(
            shown,
            [
                "· forked: begins with 1 messages of its parent's history",
                "· workspace instructions: /work/AGENTS.md",
                "⚖ auto review denied: reads a file nobody asked for",
                "◎ goal set: Read every file",
                "▣ The report\n  /work/report.md\nWhat a.txt says.",
                "· subagent-1 (look around) ended its turn",
                // A compaction says also what it summarised and what it kept.
                "· history compacted (manual): about 900 → 100 tokens\n  4 earlier messages \
                 summarised by deepseek-chat, 0 tokens\n  kept as they were: the messages after \
                 those 4; the workspace instructions and the goal, if any, are given to the \
                 model again with your next message",
                "↶ rewound files and conversation to before turn 1 (1 written back, 0 removed)",
            ]
        );
    }

    #[test]
    fn a_goal_shows_as_its_changes_and_its_rounds_prompts_stay_out() {
        let mut transcript = Transcript::default();
        let goal = Goal {
            id: "goal-1".into(),
            revision: 1,
            objective: "Make the tests pass".into(),
            phase: dsh_protocol::GoalPhase::Active,
            rounds_started: 1,
            max_goal_rounds: 3,
            blocked_reason: None,
        };
        let change = |operation| {
            Record::GoalChange(dsh_protocol::GoalChangeRecord {
                turn: 2,
                operation,
                goal: goal.clone(),
            })
        };
        let prompt = Record::UserMessage {
            turn: 2,
            message: Message::user_text("<goal_round>\n…\n</goal_round>"),
            instructions: None,
        };
        let round = transcript.cell(&change(GoalOperation::Round)).unwrap();
        assert_eq!(plain(&round), "◎ goal round 1/3: Make the tests pass");
        assert_eq!(transcript.cell(&prompt), None, "the round's own prompt");
        let done = transcript.cell(&change(GoalOperation::Complete)).unwrap();
        assert_eq!(plain(&done), "◎ goal complete: Make the tests pass");
        assert_eq!(
            transcript.cell(&prompt),
            None,
            "what the model is told after it"
        );
        // A message of the user's own is shown as ever.
        assert!(transcript.cell(&prompt).is_some());
        assert_eq!(transcript.goal.as_ref(), Some(&goal));
    }

    #[test]
    fn bash_endings_in_their_colours() {
        let ok = bash_result("built\n");
        assert_eq!(plain(&ok), "  │ built\n  └ exit 0");
        let failed = bash_result("oops\n[exit code: 2]");
        assert_eq!(plain(&failed), "  │ oops\n  └ exit 2");
        assert_eq!(failed[1].style.fg, Some(Color::Red));
        let killed = bash_result("partial\n[timed out after 1000ms]\n[killed by signal: SIGTERM]");
        assert_eq!(
            plain(&killed),
            "  │ partial\n  └ timed out after 1000ms, killed by signal: SIGTERM"
        );
        let moved = bash_result(
            "first line\n[still running after 5000ms; moved to background job job-1]\nThe command keeps running.",
        );
        assert!(
            !plain(&moved).contains("└"),
            "a job has not ended: {}",
            plain(&moved)
        );
        assert_eq!(
            plain(&bash_result("started background job job-2")),
            "  │ started background job job-2"
        );
    }

    #[test]
    fn the_goal_restated_after_a_summary_is_a_note_not_the_users_words() {
        let mut transcript = Transcript::default();
        let restated = Record::UserMessage {
            turn: 3,
            message: Message::user_text(format!(
                "{} (active, 0 of 256 rounds used): Ship it\n</system-reminder>",
                dsh_core::GOAL_RESTATED
            )),
            instructions: None,
        };
        assert_eq!(
            plain(&transcript.cell(&restated).unwrap()),
            "· the goal was restated to the model after the summary"
        );
    }
}
