//! `dsh app-server`: a two-way protocol on stdio for programs that drive dsh (the Python and
//! TypeScript SDKs, `sdk/`). The client opens a session, sends turns, answers what the run
//! asks, interrupts, and switches mode or model between turns; the server writes the `--json`
//! stream's events as they happen, a response to every message, and its own requests
//! (approvals, questions, MCP forms). `docs/sdk.md` is the protocol.
//!
//! It is one more front end of the core: a session is a `Run` built with `AgentBuilder`, each
//! turn `Run::start_task`, rendered by the same `Surface` as `--json`; what the run asks comes
//! through a `User`'s requests, answered by their own methods.

mod asks;
mod lines;
mod message;

use std::path::PathBuf;

use dsh_core::ask::{Asking, Requests};
use dsh_core::{AgentBuilder, Environment, Flags, Opening, Run, Settings, SetupError, Stop, User};
use dsh_protocol::AbortReason;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::surface::Surface;
use asks::Asks;
use message::{Body, Message, OpenRequest, Refusal, code, say};

/// Serves the protocol on stdin and stdout until stdin closes. `base` holds the command
/// line's settings, which every session starts from.
pub fn serve_stdio(base: Flags) -> Result<(), String> {
    let runtime = dsh_core::runtime()?;
    runtime.block_on(serve(base));
    // A task still reading stdin must not hold the exit.
    runtime.shutdown_background();
    Ok(())
}

/// The open session.
struct Open {
    run: Run,
    /// Its requests and its host tools' calls, read while a turn runs.
    requests: Requests,
    calls: mpsc::UnboundedReceiver<dsh_core::HostCall>,
    /// The person the run asks, kept when the run is reopened for another mode or model.
    user: User,
    /// The flags that reopen it (its session resumed), and where it runs.
    flags: Flags,
    cwd: PathBuf,
}

struct Server {
    base: Flags,
    surface: Surface,
    open: Option<Open>,
    asks: Asks,
    notices: mpsc::UnboundedSender<String>,
}

async fn serve(base: Flags) {
    let (notices, mut noticed) = mpsc::unbounded_channel::<String>();
    // Lines for the person from outside the agent (an MCP server's stderr): stderr, as a
    // headless run says them; stdout is the protocol's.
    tokio::spawn(async move {
        while let Some(line) = noticed.recv().await {
            crate::surface::notice(&line);
        }
    });
    let mut server = Server {
        base,
        surface: Surface::new(true),
        open: None,
        asks: Asks::default(),
        notices,
    };
    say(&message::ready());
    let mut inputs = read_stdin();
    while let Some(input) = inputs.recv().await {
        match input {
            Err(refusal) => refuse(&refusal),
            Ok(Message { id, body }) => match body {
                Body::Open(request) => server.open(&id, request).await,
                Body::Send { text } => {
                    if !server.turn(&id, text, &mut inputs).await {
                        break;
                    }
                }
                Body::Set { mode, model } => server.set(&id, mode, model).await,
                Body::Interrupt => say(&message::result(&id, json!({"interrupted": false}))),
                Body::Answer { request, .. } => refuse(&Refusal::new(
                    &id,
                    code::UNKNOWN_REQUEST,
                    format!("request \"{request}\" is not waiting: no turn is running"),
                )),
                Body::Close => server.close(&id).await,
                Body::Rewind(request) => server.rewind(&id, &request),
            },
        }
    }
    if let Some(open) = server.open.take() {
        open.run.close().await;
    }
}

fn refuse(refusal: &Refusal) {
    say(&message::error(
        &refusal.id,
        refusal.code,
        &refusal.message,
        None,
    ));
}

fn failed(id: &Value, error: &SetupError) {
    say(&message::error(
        id,
        &error.code,
        &error.message,
        error.hint.as_deref(),
    ));
}

impl Server {
    /// Opens a session (closing the one open), says its `session` event, and answers with
    /// its id.
    async fn open(&mut self, id: &Value, request: OpenRequest) {
        if let Some(old) = self.open.take() {
            old.run.close().await;
        }
        let cwd = match request.cwd {
            Some(cwd) if !cwd.is_absolute() || !cwd.is_dir() => {
                return refuse(&Refusal::new(
                    id,
                    code::BAD_REQUEST,
                    format!(
                        "\"cwd\" {} is not an absolute path to a folder",
                        cwd.display()
                    ),
                ));
            }
            Some(cwd) => cwd,
            None => match crate::place::cwd() {
                Ok(cwd) => cwd,
                Err(error) => return failed(id, &error),
            },
        };
        let mut flags = request.opening.flags(&self.base);
        if request.mode.is_some() {
            flags.permission_mode = request.mode;
        }
        if request.model.is_some() {
            flags.model = request.model;
        }
        let (user, requests) = User::asking(Asking {
            forms: true,
            watches_output: false,
            editor: None,
        });
        let (user, calls) = match user.with_host_tools(request.tools) {
            Ok(with_tools) => with_tools,
            Err(error) => {
                return refuse(&Refusal::new(id, code::BAD_REQUEST, error.to_string()));
            }
        };
        let run = match open_run(&cwd, &flags, &user, &self.notices).await {
            Ok(run) => run,
            Err(error) => return failed(id, &error),
        };
        let session = run.agent.session();
        let session_id = session.id().to_owned();
        let shown_cwd = session.cwd().to_string_lossy().into_owned();
        self.surface.session(&session_id, &shown_cwd);
        self.surface.todos(session.todos());
        self.surface.goal(session.goal_change());
        let flags = Opening::Resume(session_id.clone()).flags(&flags);
        self.open = Some(Open {
            run,
            requests,
            calls,
            user,
            flags,
            cwd,
        });
        say(&message::result(
            id,
            json!({"sessionId": session_id, "cwd": shown_cwd}),
        ));
    }

    /// Reopens the session with another mode or model, as the terminal UI and the web app
    /// do; when the new settings cannot open it, it goes on as it was.
    async fn set(
        &mut self,
        id: &Value,
        mode: Option<dsh_core::config::PermissionMode>,
        model: Option<String>,
    ) {
        let Some(open) = self.open.take() else {
            return refuse(&no_session(id));
        };
        let mut flags = open.flags.clone();
        if mode.is_some() {
            flags.permission_mode = mode;
        }
        if model.is_some() {
            flags.model = model;
        }
        // The session's log takes one run at a time: the old one goes first.
        let Open {
            run,
            requests,
            calls,
            user,
            flags: old_flags,
            cwd,
        } = open;
        run.close().await;
        let (run, flags, outcome) = match open_run(&cwd, &flags, &user, &self.notices).await {
            Ok(run) => (run, flags, Ok(())),
            Err(error) => match open_run(&cwd, &old_flags, &user, &self.notices).await {
                Ok(run) => (run, old_flags, Err(error)),
                Err(again) => {
                    let message = format!(
                        "{}; and reopening it as it was failed: {}",
                        error.message, again.message
                    );
                    return failed(id, &SetupError::new(error.code.clone(), message));
                }
            },
        };
        let settings = json!({
            "mode": flags.permission_mode.map(|m| m.to_string()),
            "model": flags.model,
        });
        self.open = Some(Open {
            run,
            requests,
            calls,
            user,
            flags,
            cwd,
        });
        match outcome {
            Ok(()) => say(&message::result(id, settings)),
            Err(error) => failed(id, &error),
        }
    }

    fn rewind(&mut self, id: &Value, request: &dsh_core::checkpoints::RewindRequest) {
        let Some(open) = self.open.as_mut() else {
            return refuse(&no_session(id));
        };
        match open.run.rewind(request) {
            Ok(report) => say(&message::result(
                id,
                serde_json::to_value(&report).unwrap_or_default(),
            )),
            Err(error) => say(&message::error(
                id,
                crate::rewind_cmd::rewind_code(&error),
                &error.to_string(),
                None,
            )),
        }
    }

    async fn close(&mut self, id: &Value) {
        let Some(open) = self.open.take() else {
            return refuse(&no_session(id));
        };
        open.run.close().await;
        say(&message::result(id, json!({})));
    }

    /// Runs one turn: its events as they come, what it asks as requests, and the client's
    /// answers and interrupt read meanwhile. Returns false when stdin closed during it.
    async fn turn(&mut self, id: &Value, text: String, inputs: &mut mpsc::Receiver<Input>) -> bool {
        let Server {
            surface,
            open,
            asks,
            ..
        } = self;
        let Some(Open {
            run,
            requests,
            calls,
            ..
        }) = open.as_mut()
        else {
            refuse(&no_session(id));
            return true;
        };
        let stop = Stop::new();
        surface.begin_run();
        let mut reading = true;
        let mut running = run.start_task(text, &stop);
        loop {
            tokio::select! {
                event = running.next_event() => match event {
                    Some(event) => surface.event(&event),
                    None => break,
                },
                Some(request) = requests.recv() => asks.ask(request),
                Some(call) = calls.recv() => asks.call(call),
                input = inputs.recv(), if reading => match input {
                    Some(input) => during_turn(input, asks, &stop),
                    // The client went away: the turn is stopped, as an editor's is.
                    None => {
                        reading = false;
                        stop.request(AbortReason::User);
                    }
                },
            }
        }
        let outcome = running.outcome().await;
        asks.withdraw_all();
        match outcome {
            Ok(summary) => {
                let session_id = run.agent.session().id().to_owned();
                surface.finish(&session_id, &summary, run.agent.structured_output());
                say(&message::result(
                    id,
                    json!({"reason": summary.reason, "text": summary.text}),
                ));
            }
            Err(error) => say(&message::error(id, error.code(), &error.to_string(), None)),
        }
        reading
    }
}

/// A message read while a turn runs: answers and interrupts act, the rest waits for its end.
fn during_turn(input: Input, asks: &mut Asks, stop: &Stop) {
    match input {
        Err(refusal) => refuse(&refusal),
        Ok(Message { id, body }) => match body {
            Body::Answer { request, answer } => match asks.answer(&id, &request, &answer) {
                Ok(()) => say(&message::result(&id, json!({}))),
                Err(refusal) => refuse(&refusal),
            },
            Body::Interrupt => {
                stop.request(AbortReason::User);
                say(&message::result(&id, json!({"interrupted": true})));
            }
            Body::Open(_)
            | Body::Send { .. }
            | Body::Set { .. }
            | Body::Close
            | Body::Rewind(_) => {
                refuse(&Refusal::new(
                    &id,
                    code::BUSY,
                    "a turn is running: wait for its response, or interrupt it",
                ));
            }
        },
    }
}

fn no_session(id: &Value) -> Refusal {
    Refusal::new(
        id,
        code::NO_SESSION,
        "no session is open: send {\"type\":\"open\"} first",
    )
}

async fn open_run(
    cwd: &std::path::Path,
    flags: &Flags,
    user: &User,
    notices: &mpsc::UnboundedSender<String>,
) -> Result<Run, SetupError> {
    let settings = Settings::load(cwd.to_path_buf(), &Environment::from_process(), flags)?;
    AgentBuilder::new(settings)
        .with_user(user.clone())
        .open_run(notices.clone())
        .await
}

type Input = Result<Message, Refusal>;

/// How many messages the reader may be ahead of the server: past that it stops reading stdin,
/// so a client that writes without end is held back by the pipe, not queued in memory.
const READ_AHEAD: usize = 64;

/// Reads stdin line by line in the background, so an answer or an interrupt is read while a
/// turn runs. A line too long or not UTF-8 is refused, and reading goes on.
fn read_stdin() -> mpsc::Receiver<Input> {
    let (tx, rx) = mpsc::channel(READ_AHEAD);
    tokio::spawn(async move {
        let mut input = tokio::io::BufReader::new(tokio::io::stdin());
        let mut number = 0;
        while let Ok(Some(line)) = lines::next_line(&mut input, lines::LINE_LIMIT).await {
            number += 1;
            let message = match line {
                lines::Line::Text(line) if line.trim().is_empty() => continue,
                lines::Line::Text(line) => message::parse(number, &line),
                lines::Line::TooLong(bytes) => Err(Refusal::new(
                    &Value::Null,
                    code::BAD_INPUT,
                    format!(
                        "line {number} is {} MiB, over the {} MiB a message may be; send a \
                         host tool's large output as a file's path, or cut it",
                        bytes.div_ceil(1 << 20),
                        lines::LINE_LIMIT >> 20
                    ),
                )),
                lines::Line::NotText(error) => Err(Refusal::new(
                    &Value::Null,
                    code::BAD_INPUT,
                    format!("line {number} is not UTF-8 text ({error}); send JSON in UTF-8"),
                )),
            };
            if tx.send(message).await.is_err() {
                return;
            }
        }
    });
    rx
}
