//! `dsh sessions list`, `dsh sessions show ID [--json]` and `dsh sessions export ID`: the
//! sessions of this directory, and one session's transcript, read from its log (plain or
//! compressed).

use std::fmt::Write as _;
use std::io::Write as _;

use dsh_core::export::ExportFormat;
use dsh_core::{CoreError, SetupError, list_sessions, read_log, session_log_path};
use dsh_protocol::view::reason_kind;
use dsh_protocol::{Block, Record, ToolOutputPart, View};

use crate::surface::Surface;

/// Lines of a tool result shown before the rest is counted.
const RESULT_LINES: usize = 8;

/// This directory's sessions, newest first: a table, or with `json` one object per line
/// (`SessionSummary`; nothing at all when there are none).
pub fn list(json: bool) -> u8 {
    let (home, cwd) = match crate::place::home_and_cwd() {
        Ok(found) => found,
        Err(error) => return fail(&error, json),
    };
    let sessions = list_sessions(&home, &cwd);
    let mut out = String::new();
    if json {
        for s in &sessions {
            match serde_json::to_string(s) {
                Ok(line) => {
                    let _ = writeln!(out, "{line}");
                }
                Err(e) => {
                    let message = format!("cannot encode session {}: {e}", s.id);
                    return fail(&SetupError::new("INTERNAL", message), json);
                }
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

/// The sessions of every workspace that hold `text`, best first: a line and a snippet each,
/// or with `json` one object a line (`SearchHit`; nothing at all when none does).
pub fn search(text: &str, limit: usize, json: bool) -> u8 {
    let (home, _) = match crate::place::home_and_cwd() {
        Ok(found) => found,
        Err(error) => return fail(&error, json),
    };
    let hits = dsh_core::search_sessions(&home, text, limit);
    let mut out = String::new();
    if json {
        for hit in &hits {
            let _ = writeln!(out, "{}", serde_json::to_string(hit).unwrap_or_default());
        }
    } else if hits.is_empty() {
        let _ = writeln!(
            out,
            "no session under {} holds \"{text}\"",
            home.join("sessions").display()
        );
    } else {
        for hit in &hits {
            let matches = if hit.hits == 1 { "match" } else { "matches" };
            let _ = writeln!(
                out,
                "{}  turn {} · {} · {} {matches} · {}",
                hit.id, hit.turn, hit.kind, hit.hits, hit.cwd
            );
            if let Some(title) = &hit.title {
                let _ = writeln!(out, "  {title}");
            }
            let _ = writeln!(out, "    {}", hit.snippet);
        }
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    0
}

/// Gives a session of this directory a title (or takes it away, for an empty one).
pub fn rename(id: &str, title: &str) -> u8 {
    let (home, cwd) = match crate::place::home_and_cwd() {
        Ok(found) => found,
        Err(error) => return fail(&error, false),
    };
    match dsh_core::rename_session(&home, &cwd, id, title) {
        Ok(()) => 0,
        Err(error) => fail(
            &session_failure(error, &cwd, "renamed", "sessions rename"),
            false,
        ),
    }
}

/// A session `dsh <command> <id>` cannot use, said as that command: the core's texts are for
/// a resume (they speak of --session-id, which these commands do not take). `done` is what the
/// command does to a session ("shown").
pub(crate) fn session_failure(
    error: CoreError,
    cwd: &std::path::Path,
    done: &str,
    command: &str,
) -> SetupError {
    let code = error.code();
    let message = match error {
        CoreError::UnknownSession { id, .. } => format!(
            "no session \"{id}\" was recorded in {}: `dsh sessions list` shows this \
             directory's sessions; a session is {done} from the directory it ran in",
            cwd.display()
        ),
        CoreError::OtherDirectory { id, recorded, here } => format!(
            "session \"{id}\" lives in {recorded} (it was recorded there), not in this \
             directory ({here}): run `dsh {command} {id}` from {recorded}"
        ),
        other => other.to_string(),
    };
    SetupError::new(code, message)
}

pub fn show(id: &str, json: bool) -> u8 {
    let (home, cwd) = match crate::place::home_and_cwd() {
        Ok(found) => found,
        Err(error) => return fail(&error, json),
    };
    let log = match session_log_path(&home, &cwd, id).and_then(|path| read_log(&path)) {
        Ok(log) => log,
        Err(error) => {
            return fail(
                &session_failure(error, &cwd, "shown", "sessions show"),
                json,
            );
        }
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

/// A session of this directory as a readable document on stdout: markdown or one
/// self-contained HTML page, its calls described with the built-in tools and the secrets the
/// settings here know redacted ([`dsh_core::export`]).
pub fn export(id: &str, format: ExportFormat) -> u8 {
    let settings = match crate::place::settings(&dsh_core::Flags::default()) {
        Ok(settings) => settings,
        Err(error) => return fail(&error, false),
    };
    let (home, cwd) = (settings.home().value.clone(), settings.cwd().clone());
    let catalog = dsh_core::export::builtin_catalog(&settings);
    let redactor = settings.redactor();
    match dsh_core::export::export_session(&home, &cwd, id, format, &catalog, redactor.as_ref()) {
        Ok(text) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            0
        }
        Err(error) => fail(
            &session_failure(error, &cwd, "exported", "sessions export"),
            false,
        ),
    }
}

/// A record's view as the transcript prints it.
fn transcript_line(out: &mut String, record: &Record) {
    match record.view() {
        View::TurnStart { turn } => {
            let _ = writeln!(out, "\n── turn {turn} ──");
        }
        View::User { message } => {
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
        // The calls as the model asked for them: a log repaired after a crash can lack a
        // call's own record.
        View::Answer(answer) => {
            for block in &answer.message.content {
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
        View::Result(result) => result_lines(out, &result.message),
        View::TurnEnd { turn, reason } => {
            let _ = writeln!(out, "[turn {turn} ended: {}]", reason_kind(reason));
        }
        View::Mode(permission) => {
            let _ = writeln!(
                out,
                "[permissions: {}, approval {} ({})]",
                permission.mode, permission.approval, permission.source
            );
        }
        View::Todos { todos } => {
            let _ = writeln!(out, "[todo list]");
            for todo in todos {
                let _ = writeln!(out, "  {} {}", todo.status.as_str(), todo.content);
            }
        }
        View::Card(card) => {
            let note = card.note.as_deref().map(|n| format!(" · {n}"));
            let _ = writeln!(out, "[{}{}]", card.line(), note.unwrap_or_default());
            if let Some(detail) = card.detail {
                let _ = writeln!(out, "  {}", indent(detail));
            }
        }
        View::StepStart { .. } | View::Call(_) | View::StepEnd { .. } | View::Hidden { .. } => {}
    }
}

/// A result's text, its first lines and how many more.
fn result_lines(out: &mut String, message: &dsh_protocol::Message) {
    for block in &message.content {
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

/// `dsh: <message>` on stderr and, with `json`, the `error` event with its code.
fn fail(error: &SetupError, json: bool) -> u8 {
    Surface::new(json).failed(error);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record kind shows in the transcript, unless it is hidden on purpose or is a mark
    /// the transcript has no line for (a call shows in the answer that asked for it).
    #[test]
    fn every_record_kind_shows_in_the_transcript() {
        for record in dsh_protocol::view::samples() {
            let mut out = String::new();
            transcript_line(&mut out, &record);
            let silent = matches!(
                record.view(),
                View::Hidden { .. } | View::StepStart { .. } | View::StepEnd { .. } | View::Call(_)
            );
            assert_eq!(out.is_empty(), silent, "{record:?} printed {out:?}");
        }
    }

    #[test]
    fn a_card_is_its_line_with_its_note_then_its_body() {
        let shown = dsh_protocol::view::samples()
            .into_iter()
            .filter(|r| matches!(r.view(), View::Card(_)))
            .fold(String::new(), |mut out, record| {
                transcript_line(&mut out, &record);
                out
            });
        for expected in [
            "[The report: /work/report.md]\n  What a.txt says.\n",
            "[goal set: Read every file · active, revision 1]\n",
            "[auto review denied: reads a file nobody asked for · read (call_1), reviewed by \
             reviewer, 0 tokens]\n",
            "[workspace instructions: /work/AGENTS.md]\n",
        ] {
            assert!(shown.contains(expected), "{expected:?} in\n{shown}");
        }
    }
}
