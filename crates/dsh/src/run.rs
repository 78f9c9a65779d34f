//! One headless run: read the task, set the agent up from the environment, run one turn while
//! watching for signals, and report.

use std::io::Read as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use dsh_core::{AgentBuilder, Environment, Run, Settings, SetupError, Stop};
use dsh_protocol::AbortReason;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::cli::{RunArgs, TASK_REQUIRED, TaskSource};
use crate::surface::Surface;

/// Runs and returns the exit status.
pub fn run(args: RunArgs) -> u8 {
    let mut surface = Surface::new(args.json);
    let runtime = match dsh_core::runtime() {
        Ok(runtime) => runtime,
        Err(message) => {
            surface.fail(&message, &message, Some("INTERNAL".into()));
            return 1;
        }
    };
    let status = runtime.block_on(run_turn(args, surface));
    // Everything the run started has been stopped and waited for; a task still reading stdin
    // (a run stopped during its set-up) must not hold the exit.
    runtime.shutdown_background();
    status
}

async fn run_turn(args: RunArgs, surface: Surface) -> u8 {
    // The servers' handle and the signal watcher come first: whatever the run has started by
    // the time it ends, however it ends, is stopped.
    let stop = Stop::new();
    let signalled = Arc::new(AtomicI32::new(0));
    let mcp = dsh_mcp::McpServers::default();
    let watcher = tokio::spawn(watch_signals(stop.clone(), signalled.clone(), mcp.clone()));
    let notices = Notices::start();
    // `--timeout` covers the whole run, its set-up included.
    let deadline = args.timeout.map(|limit| {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            stop.expire(format!(
                "the run's --timeout of {} ran out before a final answer",
                shown_duration(limit)
            ));
        })
    });
    let status = set_up_and_run(&args, surface, &stop, &mcp, notices.sender()).await;
    if let Some(deadline) = deadline {
        deadline.abort();
    }
    mcp.shutdown().await;
    notices.finish().await;
    watcher.abort();
    // A stopped run never reports success, whatever the turn managed before the signal.
    match signalled.load(Ordering::SeqCst) {
        0 => status,
        signal => exit_status_for(signal),
    }
}

async fn set_up_and_run(
    args: &RunArgs,
    mut surface: Surface,
    stop: &Stop,
    mcp: &dsh_mcp::McpServers,
    notices: mpsc::UnboundedSender<String>,
) -> u8 {
    // A file the answer cannot go to is found before anything is spent.
    if let Some(file) = &args.output_last_message
        && let Err(message) = answer_file_problem(file)
    {
        surface.fail(&message, &message, Some("OUTPUT_FILE".into()));
        return 1;
    }
    let set_up = tokio::select! {
        ready = set_up(args, mcp, notices) => ready,
        () = stop.token().cancelled() => Err(match stop.expired() {
            Some(_) => SetupError::new(
                "RUN_TIMEOUT",
                "the run's --timeout ran out before the task was sent".into(),
            ),
            None => SetupError::new("SIGNAL", "stopped by a signal before the task was sent".into()),
        }),
    };
    let (task, mut run) = match set_up {
        Ok(ready) => ready,
        Err(error) => {
            surface.failed(&error);
            return if stop.expired().is_some() {
                crate::exit_status::TIMEOUT
            } else {
                1
            };
        }
    };
    let session = run.agent.session();
    let session_id = session.id().to_owned();
    surface.session(&session_id, &session.cwd().to_string_lossy());
    surface.todos(session.todos());
    surface.goal(session.goal_change());
    let Some(task) = task else {
        // `--input-format stream-json`: the messages come from stdin, a turn each.
        let status = crate::stream_input::serve(&mut run, &mut surface, stop).await;
        run.close().await;
        return status;
    };

    // Rendered until the channel closes, not only until the run returns: a subagent's last
    // events are forwarded by a task of their own and can come after it, still before `final`.
    let mut events = run.take_events();
    let turn = async {
        let result = match task {
            Work::Task(task) => run.agent.run(task, stop).await,
            Work::Workflow(saved, args) => run.agent.run_workflow(&saved, args, stop).await,
        };
        let structured = run.agent.structured_output().cloned();
        // Drops the agent, which closes the event channel, and stops every process a command
        // or a server started.
        run.close().await;
        result.map(|summary| (summary, structured))
    };
    let render = async {
        while let Some(event) = events.recv().await {
            surface.event(&event);
        }
    };
    let (result, ()) = tokio::join!(turn, render);
    match result {
        Ok((summary, structured)) => {
            surface.finish(&session_id, &summary, structured.as_ref());
            if let Some(file) = &args.output_last_message
                && let Err(e) = write_answer(file, &summary.text)
            {
                let message = format!(
                    "cannot write the final answer to {}: {e} (the answer is in the output \
                     above and in session {session_id})",
                    file.display()
                );
                surface.fail(&message, &message, Some("OUTPUT_FILE".into()));
                return 1;
            }
            crate::exit_status::of(&summary.reason)
        }
        Err(error) => {
            let message = error.to_string();
            surface.fail(&message, &message, Some(error.code().into()));
            1
        }
    }
}

/// A duration as a person would write it: `90s`, `500ms`, `1.5s`.
fn shown_duration(limit: std::time::Duration) -> String {
    if limit.subsec_millis() != 0 && limit.as_secs() == 0 {
        format!("{}ms", limit.as_millis())
    } else if limit.subsec_millis() != 0 {
        format!("{:.3}s", limit.as_secs_f64())
    } else {
        format!("{}s", limit.as_secs())
    }
}

/// Why the final answer could not be written to `file`, if it could not.
fn answer_file_problem(file: &std::path::Path) -> Result<(), String> {
    let shown = file.display();
    if file.is_dir() {
        return Err(format!(
            "--output-last-message {shown} is a folder; name a file to write the answer to"
        ));
    }
    let folder = match file.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => std::path::Path::new("."),
    };
    if !folder.is_dir() {
        return Err(format!(
            "--output-last-message {shown}: the folder {} does not exist; create it or name \
             another file",
            folder.display()
        ));
    }
    Ok(())
}

/// Writes the answer whole or not at all: a reader never sees half of it.
fn write_answer(file: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut partial = file.as_os_str().to_owned();
    partial.push(format!(".dsh-{}.tmp", std::process::id()));
    let partial = std::path::PathBuf::from(partial);
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, file).inspect_err(|_| {
        let _ = std::fs::remove_file(&partial);
    })
}

/// The lines for the user that come from outside the agent's events (the MCP servers'
/// stderr, late starts), printed as they come and, at the end, to the last one.
struct Notices {
    tx: mpsc::UnboundedSender<String>,
    flush: tokio::sync::oneshot::Sender<()>,
    printer: tokio::task::JoinHandle<()>,
}

impl Notices {
    fn start() -> Notices {
        let (tx, mut lines) = mpsc::unbounded_channel::<String>();
        let (flush, mut flushed) = tokio::sync::oneshot::channel::<()>();
        let printer = tokio::spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    line = lines.recv() => match line {
                        Some(line) => crate::surface::notice(&line),
                        None => return,
                    },
                    _ = &mut flushed => break,
                }
            }
            while let Ok(line) = lines.try_recv() {
                crate::surface::notice(&line);
            }
        });
        Notices { tx, flush, printer }
    }

    fn sender(&self) -> mpsc::UnboundedSender<String> {
        self.tx.clone()
    }

    /// Prints what is still queued and stops; called once every source is stopped.
    async fn finish(self) {
        let _ = self.flush.send(());
        let _ = self.printer.await;
    }
}

/// Resolves the settings, opens the session and starts the MCP servers, then reads the task
/// (stdin last, so that a bad setting or session id fails before a supervisor has fed it) and
/// assembles the agent. With `--input-format stream-json` there is no one task: `None`.
async fn set_up(
    args: &RunArgs,
    mcp: &dsh_mcp::McpServers,
    notices: mpsc::UnboundedSender<String>,
) -> Result<(Option<Work>, Run), SetupError> {
    let cwd = crate::place::cwd()?;
    let settings = Settings::load(cwd, &Environment::from_process(), &args.flags)?;
    // A saved workflow is found before anything starts: a wrong name costs nothing.
    let workflow = match &args.task {
        TaskSource::Workflow { name, args } => Some(Work::Workflow(
            dsh_core::load_workflow(settings.cwd(), &settings.home().value, name)?,
            args.clone(),
        )),
        _ => None,
    };
    let started = AgentBuilder::new(settings).start(mcp, notices)?;
    let task = match &args.task {
        _ if args.stream_input => None,
        TaskSource::Workflow { .. } => workflow,
        TaskSource::Words(task) => Some(Work::Task(task.clone())),
        TaskSource::Stdin => Some(Work::Task(
            tokio::task::spawn_blocking(read_stdin_task)
                .await
                .map_err(|e| {
                    SetupError::new("TASK", format!("cannot read the task from stdin: {e}"))
                })??,
        )),
    };
    Ok((task, started.finish().await?))
}

/// What a run does: a task for the model, or a saved workflow with its args.
enum Work {
    Task(String),
    Workflow(dsh_core::SavedWorkflow, Option<serde_json::Value>),
}

/// The whole of stdin, verbatim (a trailing newline included).
fn read_stdin_task() -> Result<String, SetupError> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| SetupError::new("TASK", format!("cannot read the task from stdin: {e}")))?;
    let task = String::from_utf8(bytes).map_err(|_| {
        SetupError::new("TASK", "the task read from stdin is not UTF-8 text".into())
    })?;
    // The reference's text first (supervisors match it), then what stdin held.
    if task.is_empty() {
        return Err(SetupError::new(
            "TASK",
            format!("{TASK_REQUIRED} (stdin was empty)"),
        ));
    }
    if task.trim().is_empty() {
        return Err(SetupError::new(
            "TASK",
            format!("{TASK_REQUIRED} (stdin held only whitespace)"),
        ));
    }
    Ok(task)
}

/// The first SIGINT or SIGTERM stops the run cleanly; a second one kills the MCP servers'
/// process groups and ends the process at once.
async fn watch_signals(stop: Stop, signalled: Arc<AtomicI32>, mcp: dsh_mcp::McpServers) {
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    let first = tokio::select! {
        _ = interrupt.recv() => libc::SIGINT,
        _ = terminate.recv() => libc::SIGTERM,
    };
    signalled.store(first, Ordering::SeqCst);
    stop.request(AbortReason::Signal {
        signal: signal_name(first).into(),
    });
    let second = tokio::select! {
        _ = interrupt.recv() => libc::SIGINT,
        _ = terminate.recv() => libc::SIGTERM,
    };
    mcp.kill_now();
    std::process::exit(i32::from(exit_status_for(second)));
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "unknown",
    }
}

/// 128 + the signal number, as shells report a process killed by it.
fn exit_status_for(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(1)
}
