//! The agent's side of the UI: it owns the run (the agent, its processes, its MCP servers) and
//! does one piece of work at a time: a turn, a compaction, opening a session. The UI talks to
//! it through channels, so the screen stays live while a turn runs. Every run is built by
//! `dsh_core::AgentBuilder`, exactly as the headless mode builds its own.

use std::path::PathBuf;

use dsh_core::checkpoints::{RewindReport, RewindRequest, TurnFiles};
use dsh_core::{
    AgentBuilder, AgentEvent, Environment, Flags, ManualCompaction, Opening, Run, Settings, Stop,
    TurnSummary, User,
};
use dsh_protocol::{Record, Usage};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// What the UI asks of the host.
pub enum Work {
    /// Open a session (new, or `flags.session_id`), closing the one open; with the settings
    /// those flags give when the UI has already loaded them.
    Open(Box<Flags>, Option<Box<Settings>>),
    Turn {
        task: String,
        stop: Stop,
    },
    /// A command the user typed after `!`: run by the session's `bash` tool, as a turn.
    Shell {
        command: String,
        stop: Stop,
    },
    /// `/compact [FOCUS]`.
    Compact {
        focus: Option<String>,
        stop: Stop,
    },
    /// The session's turns, for `/rewind`.
    Turns,
    /// `/export`: the session written to `path` as `format`.
    Export {
        format: dsh_core::export::ExportFormat,
        path: PathBuf,
    },
    /// Show or do a rewind.
    Rewind(RewindRequest),
}

/// What the host answers.
pub enum Done {
    Opened(Result<Box<Opened>, OpenFailed>),
    Turn(Result<TurnSummary, String>),
    Compacted(Result<(ManualCompaction, Usage), String>),
    Turns(Result<Vec<TurnFiles>, String>),
    /// Where the session was exported to.
    Exported(Result<PathBuf, String>),
    Rewound(Box<Result<(RewindRequest, RewindReport), String>>),
}

/// A session that could not be opened, and what became of the one open before.
pub struct OpenFailed {
    pub message: String,
    pub before: Before,
}

/// The session open before a failed opening.
pub enum Before {
    /// None was open, or it could not be opened again: none is open now.
    Gone,
    /// It goes on, untouched.
    Kept,
    /// It goes on, opened again as it was (the same session was asked for with other
    /// settings, and its log takes one run at a time): its events come on a new channel.
    Reopened(Box<Opened>),
}

/// A session ready for messages.
pub struct Opened {
    pub info: SessionInfo,
    pub events: UnboundedReceiver<AgentEvent>,
    /// A resumed session's records, to show what happened before: those of its last turns
    /// ([`dsh_core::SHOWN_TURNS`]).
    pub earlier: Vec<Record>,
    /// How many turns came before those, not shown.
    pub not_shown: u32,
    /// The run's inbox for messages sent while a turn runs.
    pub steering: dsh_core::Steering,
}

/// What the status line and `/status` show of the session.
#[derive(Debug, Clone, Default)]
pub struct SessionInfo {
    pub id: String,
    pub model: String,
    pub cwd: PathBuf,
    pub log: PathBuf,
    pub sandbox: String,
    pub approval: String,
    /// The model has prices: usage carries its cost.
    pub priced: bool,
    /// The route's context window in tokens, for the footer's share of it in use.
    pub context_window: u64,
    /// The run's tools, as its calls are shown.
    pub catalog: dsh_core::ToolCatalog,
    pub skills: Vec<(String, String)>,
    /// The flags the session was opened with (a `/model` switch keeps the rest).
    pub flags: Flags,
    /// When to notify (`tui.notify`); `None` in tests, the default.
    pub notify: Option<dsh_core::config::Notify>,
}

/// Runs the host until the UI hangs up, then stops what the run started.
pub async fn serve(
    mut work: UnboundedReceiver<Work>,
    done: UnboundedSender<Done>,
    user: User,
    notices: UnboundedSender<String>,
) {
    let mut open: Option<OpenRun> = None;
    while let Some(job) = work.recv().await {
        let answer = match job {
            Work::Open(flags, settings) => {
                Done::Opened(switch(&mut open, *flags, settings, &user, &notices).await)
            }
            Work::Turn { task, stop } => match &mut open {
                Some(OpenRun { run, .. }) => {
                    Done::Turn(run.agent.run(task, &stop).await.map_err(|e| e.to_string()))
                }
                None => Done::Turn(Err("no session is open".into())),
            },
            Work::Shell { command, stop } => match &mut open {
                Some(OpenRun { run, .. }) => Done::Turn(
                    (run.agent.run_shell(&command, &stop).await).map_err(|e| e.to_string()),
                ),
                None => Done::Turn(Err("no session is open".into())),
            },
            Work::Compact { focus, stop } => match &mut open {
                Some(OpenRun { run, .. }) => Done::Compacted(
                    match &focus {
                        Some(focus) => run.agent.compact_on(focus, &stop).await,
                        None => run.agent.compact(&stop).await,
                    }
                    .map_err(|e| e.to_string()),
                ),
                None => Done::Compacted(Err("no session is open".into())),
            },
            Work::Export { format, path } => Done::Exported(match &open {
                Some(OpenRun { run, .. }) => (run.export(format))
                    .map_err(|e| e.to_string())
                    .and_then(|text| {
                        std::fs::write(&path, text)
                            .map_err(|e| format!("cannot write {}: {e}", path.display()))
                    })
                    .map(|()| path),
                None => Err("no session is open".into()),
            }),
            Work::Turns => match &mut open {
                Some(OpenRun { run, .. }) => Done::Turns(Ok(run.turns())),
                None => Done::Turns(Err("no session is open".into())),
            },
            Work::Rewind(request) => Done::Rewound(Box::new(match &mut open {
                Some(OpenRun { run, .. }) => run
                    .rewind(&request)
                    .map(|report| (request, report))
                    .map_err(|e| e.to_string()),
                None => Err("no session is open".into()),
            })),
        };
        if done.send(answer).is_err() {
            break;
        }
    }
    if let Some(open) = open.take() {
        open.run.close().await;
    }
}

/// The run of the session open, with what it was opened with (to open it again).
struct OpenRun {
    run: Run,
    flags: Flags,
}

/// Opens the session `flags` name. A mistyped command (a model or session that does not
/// exist) leaves the session open before as it was: another session is opened before that one
/// is closed; the same one with other settings (`/model`, `/permissions`) has to be closed
/// first, and is opened again as it was when the new settings fail.
async fn switch(
    open: &mut Option<OpenRun>,
    flags: Flags,
    settings: Option<Box<Settings>>,
    user: &User,
    notices: &UnboundedSender<String>,
) -> Result<Box<Opened>, OpenFailed> {
    let open_here = |flags, settings| open_session(flags, settings, user.clone(), notices.clone());
    let failed = |message, before| Err(OpenFailed { message, before });
    let settings = match settings {
        Some(settings) => *settings,
        None => match load_settings(&flags) {
            Ok(settings) => settings,
            Err(message) if open.is_some() => return failed(message, Before::Kept),
            Err(message) => return failed(message, Before::Gone),
        },
    };
    let same = open
        .as_ref()
        .is_some_and(|o| o.flags.session_id == flags.session_id);
    if !same {
        return match open_here(flags, Some(Box::new(settings))).await {
            Ok((run, opened)) => {
                let flags = opened.info.flags.clone();
                if let Some(before) = open.replace(OpenRun { run, flags }) {
                    before.run.close().await;
                }
                Ok(opened)
            }
            Err(message) if open.is_some() => failed(message, Before::Kept),
            Err(message) => failed(message, Before::Gone),
        };
    }
    // The same session: its log takes one run at a time.
    let Some(before) = open.take() else {
        return failed("no session is open".into(), Before::Gone);
    };
    let old_flags = before.flags.clone();
    before.run.close().await;
    match open_here(flags, Some(Box::new(settings))).await {
        Ok((run, opened)) => {
            let flags = opened.info.flags.clone();
            *open = Some(OpenRun { run, flags });
            Ok(opened)
        }
        Err(message) => match open_here(old_flags, None).await {
            Ok((run, opened)) => {
                let flags = opened.info.flags.clone();
                *open = Some(OpenRun { run, flags });
                failed(message, Before::Reopened(opened))
            }
            Err(again) => failed(
                format!("{message}; and opening the session again as it was failed: {again}"),
                Before::Gone,
            ),
        },
    }
}

fn load_settings(flags: &Flags) -> Result<Settings, String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    Settings::load(cwd, &Environment::from_process(), flags).map_err(|e| e.message)
}

async fn open_session(
    flags: Flags,
    settings: Option<Box<Settings>>,
    user: User,
    notices: UnboundedSender<String>,
) -> Result<(Run, Box<Opened>), String> {
    let settings = match settings {
        Some(settings) => *settings,
        None => load_settings(&flags)?,
    };
    let model = settings.route().model.clone();
    let context_window = settings.route().context_window.value;
    let resumed = settings.session().is_some();
    let notify = settings.notify();
    let run = AgentBuilder::new(settings)
        .with_user(user)
        .open_run(notices)
        .await
        .map_err(|e| e.message)?;
    // What the run works under, from the run: a resumed session keeps its own mode, which
    // the settings loaded here do not know.
    let permissions = run.agent.permissions();
    let session = run.agent.session();
    let (earlier, not_shown) = if resumed {
        session.shown_records()
    } else {
        (Vec::new(), 0)
    };
    // From now on the flags name this session itself (a `/model` switch reopens it).
    let flags = Opening::Resume(session.id().to_owned()).flags(&flags);
    let info = SessionInfo {
        id: session.id().to_owned(),
        model,
        cwd: session.cwd().to_path_buf(),
        log: session.log_path().to_path_buf(),
        sandbox: permissions.mode,
        approval: permissions.approval,
        priced: run.priced,
        context_window,
        catalog: run.catalog.clone(),
        skills: run.skills.clone(),
        flags,
        notify: Some(notify),
    };
    let mut run = run;
    // The UI reads the events on its own while the host runs the turns.
    let events = run.take_events();
    let opened = Box::new(Opened {
        info,
        events,
        earlier,
        not_shown,
        steering: run.agent.steering(),
    });
    Ok((run, opened))
}
