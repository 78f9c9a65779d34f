//! `dsh sessions list` and `dsh sessions show ID [--json]`: the sessions of this directory,
//! and one session's transcript, read from its log (plain or compressed).

use std::fmt::Write as _;
use std::io::Write as _;

use dsh_core::{CoreError, list_sessions, read_log, session_log_path};
use dsh_protocol::{Block, Record, ToolOutputPart};

use crate::surface::Surface;

/// Lines of a tool result shown before the rest is counted.
const RESULT_LINES: usize = 8;

/// This directory's sessions, newest first: a table, or with `json` one object per line
/// (`SessionSummary`; nothing at all when there are none).
pub fn list(json: bool) -> u8 {
    let (home, cwd) = match crate::place::home_and_cwd() {
        Ok(found) => found,
        Err(message) => return fail(&message),
    };
    let sessions = list_sessions(&home, &cwd);
    let mut out = String::new();
    if json {
        for s in &sessions {
            match serde_json::to_string(s) {
                Ok(line) => {
                    let _ = writeln!(out, "{line}");
                }
                Err(e) => return fail(&format!("cannot encode session {}: {e}", s.id)),
            }
        }
    } else if sessions.is_empty() {
        let _ = writeln!(out, "no sessions recorded in {}", cwd.display());
    } else {
        let _ = writeln!(
            out,
            "{:<44}  {:<20}  {:>5}  {:>9}  title or first task",
            "id", "created (UTC)", "turns", "tokens"
        );
        for s in &sessions {
            let _ = writeln!(
                out,
                "{:<44}  {:<20}  {:>5}  {:>9}  {}",
                s.id,
                dsh_core::utc_date_time(s.created_at),
                s.turns,
                s.total_tokens,
                clip(s.name(), 60)
            );
        }
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    0
}

/// Gives a session of this directory a title (or takes it away, for an empty one).
pub fn rename(id: &str, title: &str) -> u8 {
    let (home, cwd) = match crate::place::home_and_cwd() {
        Ok(found) => found,
        Err(message) => return fail(&message),
    };
    match dsh_core::rename_session(&home, &cwd, id, title) {
        Ok(()) => 0,
        Err(CoreError::UnknownSession { id, .. }) => fail(&not_here(&id, &cwd, "renamed")),
        Err(error) => fail(&error.to_string()),
    }
}

/// The way on from an id this directory has no session of.
fn not_here(id: &str, cwd: &std::path::Path, done: &str) -> String {
    format!(
        "no session \"{id}\" was recorded in {}: `dsh sessions list` shows this directory's \
         sessions; a session is {done} from the directory it ran in",
        cwd.display()
    )
}

pub fn show(id: &str, json: bool) -> u8 {
    let (home, cwd) = match crate::place::home_and_cwd() {
        Ok(found) => found,
        Err(message) => return fail(&message),
    };
    let log = match session_log_path(&home, &cwd, id).and_then(|path| read_log(&path)) {
        Ok(log) => log,
        // The core's text is for a resume (it says to leave --session-id out); here the way
        // on is the list of this directory's sessions.
        Err(CoreError::UnknownSession { id, .. }) => return fail(&not_here(&id, &cwd, "shown")),
        Err(error) => return fail(&error.to_string()),
    };
    let mut out = String::new();
    if json {
        // The decoded log: a header line, then one record per line, as the plain format.
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string(&log.header).unwrap_or_default()
        );
        for record in &log.records {
            let _ = writeln!(out, "{}", serde_json::to_string(record).unwrap_or_default());
        }
    } else {
        let _ = writeln!(
            out,
            "{} · {} · created {} UTC · dsh {}",
            log.header.id,
            log.header.cwd,
            dsh_core::utc_date_time(log.header.created_at),
            log.header.dsh
        );
        for envelope in &log.records {
            transcript_line(&mut out, &envelope.record);
        }
        if let Some(total) = review_total(&log.records) {
            let _ = writeln!(out, "\n{total}");
        }
        if log.torn {
            out.push_str("\n(the last line of the log was cut off by a crash and is not shown)\n");
        }
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    0
}

fn transcript_line(out: &mut String, record: &Record) {
    match record {
        Record::TurnStart { turn } => {
            let _ = writeln!(out, "\n── turn {turn} ──");
        }
        Record::UserMessage { message, .. } => {
            for block in &message.content {
                match block {
                    Block::Text { text } => {
                        let _ = writeln!(out, "user: {}", indent(text));
                    }
                    Block::Image { image } => {
                        let _ = writeln!(out, "user: {}", image.summary());
                    }
                    _ => {}
                }
            }
        }
        Record::AssistantMessage(data) => {
            for block in &data.message.content {
                match block {
                    Block::Text { text } if !text.trim().is_empty() => {
                        let _ = writeln!(out, "assistant: {}", indent(text));
                    }
                    Block::ToolCall {
                        name, arguments, ..
                    } => {
                        let _ = writeln!(out, "→ {name} {}", clip(arguments, 200));
                    }
                    _ => {}
                }
            }
        }
        Record::ToolResult(data) => {
            for block in &data.message.content {
                if let Block::ToolResult {
                    content, is_error, ..
                } = block
                {
                    let text: String = content
                        .iter()
                        .map(|part| match part {
                            ToolOutputPart::Text { text } => text.clone(),
                            ToolOutputPart::Image { image } => image.summary(),
                        })
                        .collect();
                    let mark = if *is_error { "← (error) " } else { "← " };
                    let lines: Vec<&str> = text.lines().collect();
                    let shown = lines
                        .iter()
                        .take(RESULT_LINES)
                        .copied()
                        .collect::<Vec<_>>()
                        .join("\n  ");
                    let _ = writeln!(out, "{mark}{shown}");
                    if lines.len() > RESULT_LINES {
                        let _ = writeln!(out, "  … ({} more lines)", lines.len() - RESULT_LINES);
                    }
                }
            }
        }
        Record::TurnEnd { turn, reason } => {
            let reason = serde_json::to_value(reason)
                .ok()
                .and_then(|v| v["kind"].as_str().map(str::to_owned))
                .unwrap_or_default();
            let _ = writeln!(out, "[turn {turn} ended: {reason}]");
        }
        Record::SessionSeed { messages } => {
            let _ = writeln!(
                out,
                "[forked: begins with {} messages of its parent's history]",
                messages.len()
            );
        }
        Record::SubagentRun(run) => {
            let reason = serde_json::to_value(&run.reason)
                .ok()
                .and_then(|v| v["kind"].as_str().map(str::to_owned))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "[{} {} ({}): session {}, ended: {reason}]",
                if run.fork {
                    "forked subagent"
                } else {
                    "subagent"
                },
                run.agent_id,
                run.label,
                run.session_id
            );
        }
        Record::GoalChange(change) => {
            let _ = writeln!(
                out,
                "[{}; {}, revision {}]",
                change.headline(),
                change.goal.phase.as_str(),
                change.goal.revision
            );
        }
        Record::PermissionMode(permission) => {
            let _ = writeln!(
                out,
                "[permissions: {}, approval {} ({})]",
                permission.mode, permission.approval, permission.source
            );
        }
        Record::Presentation(shown) => {
            let _ = writeln!(out, "[presented {}]", shown.headline());
            if let Some(summary) = &shown.summary {
                let _ = writeln!(out, "  {}", indent(summary));
            }
        }
        Record::TodoWrite { todos, .. } => {
            let _ = writeln!(out, "[todo list]");
            for todo in todos {
                let _ = writeln!(out, "  {} {}", todo.status.as_str(), todo.content);
            }
        }
        Record::CompactionPrune(data) => {
            let _ = writeln!(
                out,
                "[compaction: the result of {} was cut to its head and tail]",
                data.call_id
            );
        }
        Record::CompactionSummary(data) => {
            let _ = writeln!(
                out,
                "[compaction ({}): {} earlier messages summarised, about {} → {} tokens]",
                data.reason, data.replaced, data.tokens_before, data.tokens_after
            );
        }
        Record::AutoReview(review) => {
            let overridden = if review.overridden {
                ", overridden by the user"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "[auto review of {} ({}): {}{overridden} by {}, {} tokens: {}]",
                review.tool,
                review.call_id,
                review.decision.as_str(),
                review.model,
                review.usage.total_tokens,
                indent(&review.reason)
            );
        }
        Record::Rewind(rewind) => {
            let _ = writeln!(out, "[{}]", rewind.headline());
        }
        Record::StepStart { .. }
        | Record::ToolCall(_)
        | Record::StepEnd { .. }
        | Record::Checkpoint(_) => {}
    }
}

/// What the session's Auto reviews decided and billed, by themselves (the steps' usage
/// includes them): a line at the end of `dsh sessions show`, none without reviews.
fn review_total(records: &[dsh_protocol::RecordEnvelope]) -> Option<String> {
    use dsh_protocol::ReviewDecision;
    let reviews: Vec<&dsh_protocol::AutoReviewRecord> = (records.iter())
        .filter_map(|envelope| match &envelope.record {
            Record::AutoReview(review) => Some(review),
            _ => None,
        })
        .collect();
    if reviews.is_empty() {
        return None;
    }
    let count = |decision| reviews.iter().filter(|r| r.decision == decision).count();
    let usage = dsh_protocol::Usage::sum(reviews.iter().map(|r| &r.usage));
    let cost = usage
        .cost_usd
        .map(|usd| format!(", ${usd:.4}"))
        .unwrap_or_default();
    Some(format!(
        "auto review: {} calls reviewed ({} allowed, {} denied, {} failed), {} tokens{cost}",
        reviews.len(),
        count(ReviewDecision::Allowed),
        count(ReviewDecision::Denied),
        count(ReviewDecision::Failed),
        usage.total_tokens
    ))
}

fn fail(message: &str) -> u8 {
    Surface::new(false).fail(message, message, None);
    1
}

fn indent(text: &str) -> String {
    text.trim_end().replace('\n', "\n  ")
}

fn clip(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max && !text.contains('\n') {
        return line.to_owned();
    }
    let cut: String = line.chars().take(max).collect();
    format!("{cut}…")
}
