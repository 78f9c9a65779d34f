//! The agent's side of the UI: it owns the run (the agent, its processes, its MCP servers) and
//! does one piece of work at a time: a turn, a compaction, opening a session. The UI talks to
//! it through channels, so the screen stays live while a turn runs. Every run is built by
//! `dsh_core::AgentBuilder`, exactly as the headless mode builds its own.

use std::path::PathBuf;

use dsh_core::checkpoints::{RewindReport, RewindRequest, TurnFiles};
use dsh_core::{
    AgentBuilder, AgentEvent, Environment, Flags, ManualCompaction, Run, Settings, Stop,
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
    Compact {
        stop: Stop,
    },
    /// The session's turns, for `/rewind`.
    Turns,
    /// Show or do a rewind.
    Rewind(RewindRequest),
}

/// What the host answers.
pub enum Done {
    Opened(Result<Box<Opened>, String>),
    Turn(Result<TurnSummary, String>),
    Compacted(Result<(ManualCompaction, Usage), String>),
    Turns(Result<Vec<TurnFiles>, String>),
    Rewound(Box<Result<(RewindRequest, RewindReport), String>>),
}

/// A session ready for messages.
pub struct Opened {
    pub info: SessionInfo,
    pub events: UnboundedReceiver<AgentEvent>,
    /// A resumed session's records, to show what happened before.
    pub earlier: Vec<Record>,
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
    /// The run's tools, as its calls are shown.
    pub catalog: dsh_core::ToolCatalog,
    pub skills: Vec<(String, String)>,
    /// The flags the session was opened with (a `/model` switch keeps the rest).
    pub flags: Flags,
}

/// Runs the host until the UI hangs up, then stops what the run started.
pub async fn serve(
    mut work: UnboundedReceiver<Work>,
    done: UnboundedSender<Done>,
    user: User,
    notices: UnboundedSender<String>,
) {
    let mut open: Option<(Run, dsh_mcp::McpServers)> = None;
    while let Some(job) = work.recv().await {
        let answer = match job {
            Work::Open(flags, settings) => {
                if let Some((run, _)) = open.take() {
                    run.close().await;
                }
                match open_session(*flags, settings, user.clone(), notices.clone()).await {
                    Ok((run, mcp, opened)) => {
                        open = Some((run, mcp));
                        Done::Opened(Ok(opened))
                    }
                    Err(message) => Done::Opened(Err(message)),
                }
            }
            Work::Turn { task, stop } => match &mut open {
                Some((run, _)) => {
                    Done::Turn(run.agent.run(task, &stop).await.map_err(|e| e.to_string()))
                }
                None => Done::Turn(Err("no session is open".into())),
            },
            Work::Compact { stop } => match &mut open {
                Some((run, _)) => {
                    Done::Compacted(run.agent.compact(&stop).await.map_err(|e| e.to_string()))
                }
                None => Done::Compacted(Err("no session is open".into())),
            },
            Work::Turns => match &mut open {
                Some((run, _)) => Done::Turns(Ok(run.turns())),
                None => Done::Turns(Err("no session is open".into())),
            },
            Work::Rewind(request) => Done::Rewound(Box::new(match &mut open {
                Some((run, _)) => run
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
    if let Some((run, _)) = open.take() {
        run.close().await;
    }
}

async fn open_session(
    flags: Flags,
    settings: Option<Box<Settings>>,
    user: User,
    notices: UnboundedSender<String>,
) -> Result<(Run, dsh_mcp::McpServers, Box<Opened>), String> {
    let settings = match settings {
        Some(settings) => *settings,
        None => {
            let cwd = std::env::current_dir()
                .map_err(|e| format!("cannot read the current directory: {e}"))?;
            Settings::load(cwd, &Environment::from_process(), &flags).map_err(|e| e.message)?
        }
    };
    let mcp = dsh_mcp::McpServers::default();
    let model = settings.route().model.clone();
    let sandbox = settings.permission_mode().value.to_string();
    let approval = settings.approval().value.to_string();
    let resumed = settings.session().is_some();
    let run = AgentBuilder::new(settings)
        .with_user(user)
        .open(&mcp, notices)
        .await
        .map_err(|e| e.message)?;
    let session = run.agent.session();
    let earlier = if resumed {
        session.logged_records()
    } else {
        Vec::new()
    };
    // From now on the flags name this session itself (a `/model` switch reopens it).
    let mut flags = flags;
    flags.session_id = Some(session.id().to_owned());
    flags.continue_latest = false;
    flags.fork = false;
    let info = SessionInfo {
        id: session.id().to_owned(),
        model,
        cwd: session.cwd().to_path_buf(),
        log: session.log_path().to_path_buf(),
        sandbox,
        approval,
        priced: run.priced,
        catalog: run.catalog.clone(),
        skills: run.skills.clone(),
        flags,
    };
    let mut run = run;
    // The UI reads the events on its own while the host runs the turns.
    let events = run.take_events();
    let opened = Box::new(Opened {
        info,
        events,
        earlier,
    });
    Ok((run, mcp, opened))
}
