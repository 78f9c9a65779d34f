//! One open session: its run, built with `AgentBuilder` as every front end builds one, and
//! its turns, each a `session/prompt` whose events are told to the client as they happen.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, Cost, McpServer, Notice, NoticeSeverity, PromptResponse, SessionId,
    SessionNotification, SessionUpdate, StopReason, Usage as AcpUsage, UsageUpdate,
};
use dsh_core::ask::Asking;
use dsh_core::{
    AgentBuilder, AgentEvent, Environment, Flags, Opening, Run, Settings, SetupError, SetupKind,
    Stop, ToolCatalog, User,
};
use dsh_protocol::{AbortReason, Record, TurnEndReason, Usage};
use tokio::sync::mpsc::{self, UnboundedReceiver};

use crate::client::EditorClient;
use crate::updates;

/// Why a session could not be opened or a turn could not run, as the client reads it.
#[derive(Debug)]
pub struct Failure {
    /// What went wrong, for this crate to act on; [`SetupKind::Other`] for a failed turn.
    pub kind: SetupKind,
    /// dsh's code (`SESSION_NOT_FOUND`, `CONFIG`, a provider's failure code).
    pub code: String,
    pub message: String,
    /// What to do about it, when dsh knows.
    pub hint: Option<String>,
}

impl Failure {
    /// A turn that ended in a failure of its own (a provider's code, `MAX_TURNS`...).
    pub fn turn(code: impl Into<String>, message: impl Into<String>) -> Self {
        Failure {
            kind: SetupKind::Other,
            code: code.into(),
            message: message.into(),
            hint: None,
        }
    }
}

impl From<SetupError> for Failure {
    fn from(error: SetupError) -> Self {
        Failure {
            kind: error.kind(),
            code: error.code.into_owned(),
            message: error.message,
            hint: error.hint,
        }
    }
}

/// An open session. Its run waits behind a lock: one turn at a time, and a prompt sent
/// while a turn runs waits for it.
pub struct OpenSession {
    pub id: SessionId,
    pub cwd: PathBuf,
    /// Its log, read for `session/load` without waiting for a running turn.
    log: PathBuf,
    /// The run; `None` once the session is closed.
    turn: tokio::sync::Mutex<Option<Opened>>,
    /// The running turn's stop, for `session/cancel`.
    stop: Mutex<Option<Stop>>,
    /// How many times the session was cancelled: a prompt that was waiting for the turn
    /// before it when a cancel came is cancelled too, not run.
    cancels: AtomicU64,
    /// The run's tools, as its calls are shown.
    pub catalog: ToolCatalog,
}

struct Opened {
    run: Run,
    notices: UnboundedReceiver<String>,
    context_window: u64,
    /// What the session has been billed, its earlier turns included.
    billed: Usage,
}

/// A prompt's place in its session's queue, taken as it arrives ([`OpenSession::queue`]).
pub struct Queued(u64);

impl OpenSession {
    /// Opens a session in `cwd` with the server's settings; its approvals and questions go to
    /// the client on `connection`.
    pub async fn open(
        base: &Flags,
        cwd: &Path,
        opening: Opening,
        editor_servers: &[McpServer],
        connection: ConnectionTo<Client>,
        client: &ClientCapabilities,
    ) -> Result<OpenSession, Failure> {
        let notices_supported = (client.session.as_ref()).is_some_and(|s| s.notices.is_some());
        // `session/load` and `session/resume` go on with an existing session of dsh's.
        let mut flags = opening.flags(base);
        flags.interactive = true;
        // The editor's servers join the config's (one of the same name is the editor's) as the
        // settings are resolved, so that their env and header values are redacted like any key.
        let (given, skipped) = crate::mcp::servers(editor_servers, cwd);
        flags.mcp_servers = given;
        let settings = Settings::load(cwd.to_path_buf(), &Environment::from_process(), &flags)
            .map_err(Failure::from)?;
        let (notices_tx, notices) = mpsc::unbounded_channel();
        for line in skipped {
            let _ = notices_tx.send(line);
        }
        let context_window = settings.route().context_window.value;
        let editor = EditorClient::new(connection.clone(), client);
        let (user, requests) = User::asking(Asking {
            forms: editor.forms(),
            watches_output: false,
            editor: Some(Arc::new(editor.clone())),
        });
        let answering = editor.clone();
        // The connection closed: nobody is left to ask, and the requests are cancelled.
        let _ = connection.spawn(async move {
            answering.answer(requests).await;
            Ok(())
        });
        let run = AgentBuilder::new(settings)
            .with_user(user)
            .open_run(notices_tx)
            .await
            .map_err(Failure::from)?;
        let session = run.agent.session();
        let id = SessionId::new(session.id());
        editor.opened(id.clone(), run.catalog.clone());
        let cwd = session.cwd().to_path_buf();
        let log = session.log_path().to_path_buf();
        // The cost a session reports is the whole session's, its turns before this opening
        // included.
        let mut billed = Usage::default();
        for record in session.logged_records() {
            if let Record::StepEnd { usage, .. } = record {
                billed.add(&usage);
            }
        }
        // Notices are dropped for a client that cannot show them: they are never part of
        // the answer.
        let notices = if notices_supported {
            notices
        } else {
            mpsc::unbounded_channel().1
        };
        Ok(OpenSession {
            catalog: run.catalog.clone(),
            id,
            cwd,
            log,
            turn: tokio::sync::Mutex::new(Some(Opened {
                run,
                notices,
                context_window,
                billed,
            })),
            stop: Mutex::new(None),
            cancels: AtomicU64::new(0),
        })
    }

    /// Every record of the session so far, for `session/load` to replay: a running turn's
    /// records as far as they are logged.
    pub fn history(&self) -> Vec<Record> {
        dsh_core::logged_records(&self.log)
    }

    /// Takes a prompt's place in the queue, when it arrives: a cancel after this cancels it.
    pub fn queue(&self) -> Queued {
        Queued(self.cancels.load(Ordering::SeqCst))
    }

    /// Asks the running turn, if any, to stop, as Esc in an editor does.
    pub fn cancel(&self) {
        self.cancels.fetch_add(1, Ordering::SeqCst);
        if let Ok(stop) = self.stop.lock()
            && let Some(stop) = stop.as_ref()
        {
            stop.request(AbortReason::User);
        }
    }

    /// Runs one turn: its events go to the client as session updates while it runs, and
    /// the response says how it ended.
    pub async fn prompt(
        &self,
        queued: Queued,
        text: String,
        connection: &ConnectionTo<Client>,
    ) -> Result<PromptResponse, Failure> {
        let asked_at = queued.0;
        let mut opened = self.turn.lock().await;
        // Closed, or cancelled while it waited for the turn before it.
        let Some(opened) = opened.as_mut() else {
            return Ok(PromptResponse::new(StopReason::Cancelled));
        };
        if self.cancels.load(Ordering::SeqCst) != asked_at {
            return Ok(PromptResponse::new(StopReason::Cancelled));
        }
        let stop = Stop::new();
        if let Ok(mut running) = self.stop.lock() {
            *running = Some(stop.clone());
        }
        let tell = |update: SessionUpdate| {
            // A client that went away misses the rest; the turn still ends and is logged.
            let _ = connection.send_notification(SessionNotification::new(self.id.clone(), update));
        };
        let Opened {
            run,
            notices,
            context_window,
            billed,
        } = opened;
        let cwd = self.cwd.clone();
        let told = |event: &AgentEvent, billed: &mut Usage| {
            for update in updates::live(event, &cwd, &self.catalog) {
                tell(update);
            }
            if let AgentEvent::Record(Record::StepEnd { usage, .. }) = event {
                billed.add(usage);
                tell(usage_update(usage, *context_window, billed));
            }
        };
        let mut running = run.start_task(text, &stop);
        loop {
            // Notices first: the task's end must not leave one waiting for the next prompt.
            tokio::select! {
                biased;
                Some(line) = notices.recv() => {
                    tell(SessionUpdate::Notice(Notice::new(NoticeSeverity::Warning, line)));
                }
                event = running.next_event() => match event {
                    Some(event) => told(&event, billed),
                    None => break,
                },
            }
        }
        let outcome = running.outcome().await;
        if let Ok(mut running) = self.stop.lock() {
            *running = None;
        }
        let summary = outcome.map_err(|e| Failure::turn(e.code(), e.to_string()))?;
        let stop_reason = match &summary.reason {
            TurnEndReason::Completed | TurnEndReason::PlanSubmitted => StopReason::EndTurn,
            TurnEndReason::Aborted { .. } | TurnEndReason::Interrupted => StopReason::Cancelled,
            TurnEndReason::MaxTokens => StopReason::MaxTokens,
            TurnEndReason::MaxTurns { .. } | TurnEndReason::MaxBudget { .. } => {
                StopReason::MaxTurnRequests
            }
            other => {
                let (code, message) = other
                    .failure()
                    .unwrap_or(("ERROR".into(), "the turn failed"));
                return Err(Failure::turn(code, message));
            }
        };
        Ok(PromptResponse::new(stop_reason).usage(turn_usage(&summary.usage)))
    }

    /// Stops the running turn, if any, waits for it to end, and stops every process the
    /// session started (commands, background jobs, MCP servers). The log is whole after every
    /// record, so nothing else needs closing.
    pub async fn close(&self) {
        self.cancel();
        let opened = self.turn.lock().await.take();
        if let Some(opened) = opened {
            opened.run.close().await;
        }
    }
}

/// The context in use after a step (what the model read, cached or not, and what it wrote),
/// the window's size, and
/// what the session cost so far when the model's prices are known.
fn usage_update(step: &Usage, window: u64, billed: &Usage) -> SessionUpdate {
    let used = step.prompt_tokens() + step.output_tokens;
    let cost = billed.cost_usd;
    SessionUpdate::UsageUpdate(
        UsageUpdate::new(used, window).cost(cost.map(|c| Cost::new(c, "USD"))),
    )
}

/// A turn's tokens, as the prompt's response reports them.
fn turn_usage(usage: &Usage) -> AcpUsage {
    AcpUsage::new(usage.total_tokens, usage.input_tokens, usage.output_tokens)
        .thought_tokens(Some(usage.reasoning_tokens).filter(|n| *n > 0))
        .cached_read_tokens(Some(usage.cache_read_tokens).filter(|n| *n > 0))
        .cached_write_tokens(Some(usage.cache_write_tokens).filter(|n| *n > 0))
}
