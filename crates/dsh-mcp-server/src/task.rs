//! One tool call: a turn of a session (new, or resumed), with its events told to the client as
//! progress, stopped when the client cancels the request.

use std::path::PathBuf;
use std::time::Instant;

use dsh_core::config::PermissionMode;
use dsh_core::{
    AgentBuilder, AgentEvent, Environment, Flags, Settings, SetupError, SetupKind, Stop,
    ToolCatalog, TurnSummary,
};
use dsh_protocol::{AbortReason, StreamEvent, Tone, View};
use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::sessions::Sessions;

/// What a call asks for.
pub struct Task {
    pub flags: Flags,
    pub cwd: PathBuf,
    pub prompt: String,
    /// The call's `sandbox`: it may narrow the server's mode, never widen it.
    pub sandbox: Option<PermissionMode>,
}

/// What kept a call's turn from running, as the calling model reads it: the code first when
/// dsh has one, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error(
        "cwd \"{}\" is not a folder: give a folder that exists, absolute or relative to the \
         server's",
        .0.display()
    )]
    NotAFolder(PathBuf),
    #[error(
        "sandbox \"{asked}\" is wider than this server allows ({allowed}): a call may only \
         narrow it; the server's operator can start it with --permission-mode {asked}"
    )]
    Wider {
        asked: PermissionMode,
        allowed: PermissionMode,
    },
    /// `dsh-reply` named a session its folder has none of.
    #[error(
        "SESSION_NOT_FOUND: no session {id} was run in {}: give dsh-reply the cwd the session \
         ran in",
        cwd.display()
    )]
    UnknownSession { id: String, cwd: PathBuf },
    #[error("{}: {}", .0.code, .0.with_hint_line())]
    Setup(SetupError),
    #[error("cancelled before the task was sent")]
    Cancelled,
}

/// A turn that ran (to an answer or not).
pub struct Ran {
    pub session_id: String,
    summary: TurnSummary,
    started: Instant,
}

impl Task {
    /// The settings of the call: the server's, then the call's own. A `sandbox` wider than
    /// the server's mode is refused: the operator who started the server decides how far a
    /// calling model may reach.
    fn settings(&self) -> Result<Settings, TaskError> {
        if !self.cwd.is_dir() {
            return Err(TaskError::NotAFolder(self.cwd.clone()));
        }
        let env = Environment::from_process();
        let load = |flags: &Flags| {
            Settings::load(self.cwd.clone(), &env, flags).map_err(|e| self.setup_failure(e))
        };
        let settings = load(&self.flags)?;
        let Some(asked) = self.sandbox else {
            return Ok(settings);
        };
        let allowed = settings.permission_mode().value;
        if asked.is_wider_than(allowed) {
            return Err(TaskError::Wider { asked, allowed });
        }
        let mut flags = self.flags.clone();
        flags.permission_mode = Some(asked);
        load(&flags)
    }

    /// A setting or session that kept the turn from running, as the calling model should
    /// read it: the code, and what to do.
    fn setup_failure(&self, error: SetupError) -> TaskError {
        match (error.kind(), &self.flags.session_id) {
            (SetupKind::SessionNotFound, Some(id)) => TaskError::UnknownSession {
                id: id.clone(),
                cwd: self.cwd.clone(),
            },
            _ => TaskError::Setup(error),
        }
    }

    /// Opens the session, runs the turn and closes everything the run started. An error is
    /// what kept the turn from running (a bad setting, an unknown session), as the model
    /// calling us should read it.
    pub async fn run(
        self,
        mut progress: Option<Progress>,
        cancel: CancellationToken,
        sessions: &Sessions,
    ) -> Result<Ran, TaskError> {
        let started = Instant::now();
        let settings = self.settings()?;
        let mcp = dsh_core::McpServers::default();
        let (notices, mut notice_lines) = mpsc::unbounded_channel::<String>();
        let opened = AgentBuilder::new(settings).open(&mcp, notices);
        let mut run = tokio::select! {
            run = opened => run.map_err(|e| self.setup_failure(e))?,
            () = cancel.cancelled() => {
                mcp.shutdown().await;
                return Err(TaskError::Cancelled);
            }
        };
        let session_id = run.agent.session().id().to_owned();
        let catalog = run.catalog.clone();
        let _turn = sessions.opened(&session_id, run.agent.session().cwd());
        let stop = Stop::new();
        let mut running = run.start_task(self.prompt, &stop);
        let mut cancelled = false;
        loop {
            tokio::select! {
                event = running.next_event() => match event {
                    Some(event) => told(&event, &catalog, &mut progress).await,
                    None => break,
                },
                Some(line) = notice_lines.recv() => {
                    if let Some(progress) = &mut progress {
                        progress.tell(line).await;
                    }
                }
                () = cancel.cancelled(), if !cancelled => {
                    cancelled = true;
                    stop.request(AbortReason::User);
                }
            }
        }
        let outcome = running.outcome().await;
        run.close().await;
        let summary = outcome.map_err(|e| TaskError::Setup(e.into()))?;
        Ok(Ran {
            session_id,
            summary,
            started,
        })
    }
}

impl Ran {
    /// The answer as text; the `final` event of the `--json` stream as structured content. A
    /// turn that ended without an answer is a failed call whose text says why.
    pub fn into_result(self) -> CallToolResult {
        let event = StreamEvent::Final {
            session_id: self.session_id,
            reason: Some(self.summary.reason.clone()),
            text: self.summary.text.clone(),
            usage: self.summary.usage,
            duration_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            steps: self.summary.steps,
            structured_output: None,
        };
        let mut structured = serde_json::to_value(&event).unwrap_or_default();
        if let Some(fields) = structured.as_object_mut() {
            fields.remove("type");
        }
        let reason = &self.summary.reason;
        let mut result = if reason.is_answer() {
            CallToolResult::success(vec![ContentBlock::text(self.summary.text)])
        } else {
            let text = failure_text(reason, &self.summary.text);
            CallToolResult::error(vec![ContentBlock::text(text)])
        };
        result.structured_content = Some(structured);
        result
    }
}

/// A failed call's text, for the calling model: the code first, as on every other surface
/// (`dsh: AUTH: ...` on the command line, `AUTH: ...` in ACP errors and this server's own
/// setup failures), so the same words mean the same thing wherever they are read; then what
/// happened, then what the model said before it stopped. A turn that ended without a failure
/// code (cancelled, cut at the output limit) gets its reason's kind in capitals.
fn failure_text(reason: &dsh_protocol::TurnEndReason, said: &str) -> String {
    use dsh_protocol::TurnEndReason;
    let mut text = match reason.failure() {
        Some((code, message)) => format!("{code}: {message}"),
        None => {
            let code = kind_of(reason).to_uppercase().replace('-', "_");
            let why = match reason {
                TurnEndReason::Aborted { .. } => {
                    "the turn was stopped before it answered; dsh-reply with its sessionId \
                     continues the session"
                }
                TurnEndReason::MaxTokens => "the answer was cut at the model's output token limit",
                _ => "the turn ended without an answer",
            };
            format!("{code}: {why}")
        }
    };
    if !said.is_empty() {
        text.push_str("\n\nWhat it said before it stopped:\n");
        text.push_str(said);
    }
    text
}

/// The `kind` a reason is written with in the stream (`aborted`, `max-tokens`).
fn kind_of(reason: &dsh_protocol::TurnEndReason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_owned))
        .unwrap_or_default()
}

/// Progress notifications for one request: a count that only grows, and what happened.
pub struct Progress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    count: u32,
}

impl Progress {
    pub fn new(peer: Peer<RoleServer>, token: ProgressToken) -> Progress {
        Progress {
            peer,
            token,
            count: 0,
        }
    }

    async fn tell(&mut self, message: String) {
        self.count += 1;
        let note = ProgressNotificationParam::new(self.token.clone(), f64::from(self.count))
            .with_message(message);
        // A client that went away misses its progress; the turn goes on to its end.
        let _ = self.peer.notify_progress(note).await;
    }
}

/// Tells the client what the event says.
async fn told(event: &AgentEvent, catalog: &ToolCatalog, progress: &mut Option<Progress>) {
    if let (Some(progress), Some(message)) = (progress, said(event, catalog)) {
        progress.tell(message).await;
    }
}

/// What an event is worth telling the client while it waits: steps, calls, results and the
/// answer's first line; streaming pieces are not (the result has the whole answer).
fn said(event: &AgentEvent, catalog: &ToolCatalog) -> Option<String> {
    let AgentEvent::Record(record) = event else {
        return None;
    };
    match record.view() {
        View::StepStart { step, .. } => Some(format!("step {step}")),
        View::Call(call) => {
            let args = serde_json::from_str(&call.arguments).unwrap_or_default();
            let summary = catalog.describe(&call.name, &args).summary;
            Some(format!("{} {summary}", call.name).trim_end().to_owned())
        }
        View::Result(result) => {
            let failed = result.error.is_some();
            Some(
                match (failed, &result.command) {
                    (true, _) => "tool failed",
                    (false, Some(command)) if command.exit_code.is_some_and(|c| c != 0) => {
                        "command failed"
                    }
                    _ => "tool done",
                }
                .to_owned(),
            )
        }
        View::Todos { todos } => {
            let done = (todos.iter())
                .filter(|t| t.status == dsh_protocol::TodoStatus::Completed)
                .count();
            Some(format!("todo list: {done} of {} done", todos.len()))
        }
        // What was handed to the user says so; a routine card (a call the review allowed)
        // is not worth telling.
        View::Card(card) if card.tone == Tone::Handed => Some(format!("presented {}", card.line())),
        View::Card(card) => (!card.routine).then(|| card.line()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use dsh_protocol::{Failure, FailureCode, TurnEndReason};

    use super::*;

    /// `dsh-reply` with an id its folder has no session of is told what to do, found by the
    /// failure's kind; any other setup failure is passed on with its code.
    #[test]
    fn an_unknown_session_is_told_by_its_kind() {
        let task = Task {
            flags: Flags {
                session_id: Some("session-nope".into()),
                ..Flags::default()
            },
            cwd: PathBuf::from("/work/project"),
            prompt: String::new(),
            sandbox: None,
        };
        let unknown = SetupError::of(SetupKind::SessionNotFound, "no such id".into());
        let unknown = task.setup_failure(unknown);
        assert!(
            matches!(unknown, TaskError::UnknownSession { .. }),
            "{unknown:?}"
        );
        assert_eq!(
            unknown.to_string(),
            "SESSION_NOT_FOUND: no session session-nope was run in /work/project: give \
             dsh-reply the cwd the session ran in"
        );
        let locked = SetupError::of(SetupKind::SessionLocked, "in use".into()).with_hint("wait");
        assert_eq!(
            task.setup_failure(locked).to_string(),
            "SESSION_LOCKED: in use\nhint: wait"
        );
    }

    /// Every card is told while the client waits, as its line: what the model handed the
    /// user says so.
    #[test]
    fn every_card_is_told() {
        let catalog = ToolCatalog::default();
        // A routine card (a call the review allowed, the session's title) is not worth
        // telling, as in the other front ends.
        let told: Vec<Option<String>> = (dsh_protocol::view::samples().into_iter())
            .filter(|r| matches!(r.view(), View::Card(card) if !card.routine))
            .map(|r| said(&AgentEvent::Record(r), &catalog))
            .collect();
        assert!(told.iter().all(Option::is_some), "{told:?}");
        assert!(
            told.contains(&Some("presented The report: /work/report.md".into())),
            "{told:?}"
        );
        assert!(
            told.contains(&Some("goal set: Read every file".into())),
            "{told:?}"
        );
    }

    #[test]
    fn a_failed_calls_text_starts_with_its_code() {
        let auth = TurnEndReason::Error {
            error: Failure::new(
                FailureCode::Auth,
                "the provider refused the API key; check DEEPSEEK_API_KEY",
            ),
        };
        assert_eq!(
            failure_text(&auth, ""),
            "AUTH: the provider refused the API key; check DEEPSEEK_API_KEY"
        );
        let cap = TurnEndReason::MaxTurns {
            message: "3 requests made".into(),
        };
        assert_eq!(
            failure_text(&cap, "Half done."),
            "MAX_TURNS: 3 requests made\n\nWhat it said before it stopped:\nHalf done."
        );
        let stopped = TurnEndReason::Aborted {
            reason: AbortReason::User,
        };
        assert!(
            failure_text(&stopped, "").starts_with("ABORTED: the turn was stopped"),
            "{}",
            failure_text(&stopped, "")
        );
        assert!(failure_text(&TurnEndReason::MaxTokens, "").starts_with("MAX_TOKENS: "));
    }
}
