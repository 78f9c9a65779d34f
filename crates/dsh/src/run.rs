//! One headless run: read the task, set the agent up from the environment, run one turn while
//! watching for signals, and report.

use std::io::Read as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use dsh_core::instructions::InstructionSettings;
use dsh_core::{Agent, AgentConfig, Config, Credentials, LogOptions, Session, Stop};
use dsh_llm::{RetryPolicy, Retrying};
use dsh_protocol::AbortReason;
use dsh_sandbox::escalation::ApprovalPolicy;
use dsh_sandbox::{BackendChoice, Sandbox, SandboxMode, SandboxPolicy, SandboxSettings};
use dsh_tools::{
    AttachmentStore, ModelCaps, Shell, ShellEnv, SpillStore, StrReplaceEditor, ToolRegistry,
    ToolSession,
};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::cli::{RunArgs, TASK_REQUIRED, TaskSource};
use crate::surface::Surface;

/// The model used when none is named.
pub const DEFAULT_MODEL: &str = "deepseek-v4-flash";

/// Runs and returns the exit status.
pub fn run(args: RunArgs) -> u8 {
    let mut surface = Surface::new(args.json);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let message = format!("cannot start the async runtime: {e}");
            surface.fail(&message, &message, None);
            return 1;
        }
    };
    let status = runtime.block_on(run_turn(args, surface));
    // Everything the run started has been stopped and waited for; a task still reading stdin
    // (a run stopped during its set-up) must not hold the exit.
    runtime.shutdown_background();
    status
}

/// A failure before the agent runs, reported as `dsh: <message>`.
pub(crate) struct SetupError(pub(crate) String);

async fn run_turn(args: RunArgs, surface: Surface) -> u8 {
    // The servers' handle and the signal watcher come first: whatever the run has started by
    // the time it ends, however it ends, is stopped.
    let stop = Stop::new();
    let signalled = Arc::new(AtomicI32::new(0));
    let mcp = dsh_mcp::McpServers::default();
    let watcher = tokio::spawn(watch_signals(stop.clone(), signalled.clone(), mcp.clone()));
    let notices = Notices::start();
    let status = set_up_and_run(&args, surface, &stop, &mcp, notices.sender()).await;
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
    let set_up = tokio::select! {
        ready = set_up(args, mcp, notices) => ready,
        () = stop.token().cancelled() => Err(SetupError(
            "stopped by a signal before the task was sent".into(),
        )),
    };
    let Ready {
        task,
        mut agent,
        events: rx,
        shell,
        prices,
    } = match set_up {
        Ok(ready) => ready,
        Err(SetupError(message)) => {
            surface.fail(&message, &message, None);
            return 1;
        }
    };
    let mut surface = surface.with_prices(prices);
    let session_id = agent.session().id().to_owned();
    surface.session(&session_id, &agent.session().cwd().to_string_lossy());

    let turn = async {
        let result = agent.run(task, stop).await;
        drop(agent); // closes the event channel, ending the renderer below
        // Nothing a command or a server started outlives the run.
        tokio::join!(shell.shutdown(), mcp.shutdown());
        result
    };
    let render = async {
        let mut rx = rx;
        while let Some(event) = rx.recv().await {
            surface.event(&event);
        }
    };
    let (result, ()) = tokio::join!(turn, render);
    match result {
        Ok(summary) => {
            surface.finish(&session_id, &summary);
            if summary.reason.is_completed() { 0 } else { 1 }
        }
        Err(error) => {
            let message = error.to_string();
            surface.fail(&message, &message, None);
            1
        }
    }
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

/// What a run needs once it is set up.
struct Ready {
    task: String,
    agent: Agent,
    events: mpsc::UnboundedReceiver<dsh_core::AgentEvent>,
    shell: Arc<Shell>,
    prices: Option<dsh_protocol::Prices>,
}

async fn set_up(
    args: &RunArgs,
    mcp: &dsh_mcp::McpServers,
    notices: mpsc::UnboundedSender<String>,
) -> Result<Ready, SetupError> {
    let (home, cwd) = crate::place::home_and_cwd().map_err(SetupError)?;

    let files = Config::load(&home, &cwd, &args.patches).map_err(|e| SetupError(e.to_string()))?;
    let model_ref = args
        .model
        .clone()
        .or_else(|| files.model.clone())
        .unwrap_or_else(|| DEFAULT_MODEL.into());
    let credentials = Credentials::load(&cwd, &home).map_err(|e| SetupError(e.to_string()))?;
    let route = crate::route::resolve(&model_ref, &files, &credentials)?;
    let provider = route.endpoint.connect()?;
    let defaults = RetryPolicy::default();
    let ms = std::time::Duration::from_millis;
    let retry = RetryPolicy {
        retries: files.requests.retries.unwrap_or(defaults.retries),
        base_delay: files.requests.retry_base_ms.map_or(defaults.base_delay, ms),
        max_delay: files.requests.retry_max_ms.map_or(defaults.max_delay, ms),
        max_retry_after: files
            .requests
            .retry_after_max_ms
            .map_or(defaults.max_retry_after, ms),
    };
    let provider = Retrying::new(provider, retry);
    // The permission settings are checked before stdin is read, so a supervisor's bad grant
    // fails before it has fed the task.
    let mode = permission_mode(args.permission_mode, &files)?;
    let add_dirs = check_add_dirs(&args.add_dirs)?;
    let approval = match (args.approval_policy, &files.approval.policy) {
        (Some(policy), _) => policy,
        (None, Some(name)) => name
            .parse::<ApprovalPolicy>()
            .map_err(|e| SetupError(format!("config approval.policy: {e}")))?,
        (None, None) => ApprovalPolicy::default_for(mode),
    };
    let sandbox = Arc::new(Sandbox::new(sandbox_settings(&files)?));
    let log_options = LogOptions {
        fsync: files.sessions.fsync,
        zstd: match files.sessions.compression.as_deref() {
            None | Some("none") => false,
            Some("zstd") => true,
            Some(other) => {
                return Err(SetupError(format!(
                    "config sessions.compression: unknown compression \"{other}\": use none or zstd"
                )));
            }
        },
    };
    // A session to continue is found, locked and repaired before stdin is read or anything is
    // sent: a wrong id costs nothing.
    let session = match &args.session_id {
        Some(id) => Session::resume(&home, cwd.clone(), id, log_options)
            .map_err(|e| SetupError(e.to_string()))?,
        None => Session::create(&home, cwd.clone(), log_options),
    };
    let mut shell_env = ShellEnv::new(vec![
        ("DSH_HOME".into(), home.clone().into_os_string()),
        ("DSH_SESSION_ID".into(), session.id().into()),
        (
            "DSH_SESSION_JSONL".into(),
            session.log_path().as_os_str().to_owned(),
        ),
    ]);
    if let Some(scrub) = &files.shell.scrub {
        shell_env.scrub = scrub.iter().map(|s| s.to_uppercase()).collect();
    }
    let effort = match (args.effort, &files.effort) {
        (Some(effort), _) => Some(effort),
        (None, Some(level)) => Some(level.parse().map_err(|_| {
            SetupError(format!(
                "config effort: \"{level}\" is not an effort level: use off, low, high or max"
            ))
        })?),
        (None, None) => None,
    };
    // MCP servers start now, so they get ready while the task is read.
    let (mcp_startup, mcp_joins) =
        dsh_mcp::McpStartup::begin(mcp, crate::mcp::servers(&files, &cwd, &shell_env)?, notices);
    let task = match &args.task {
        TaskSource::Words(task) => task.clone(),
        TaskSource::Stdin => tokio::task::spawn_blocking(read_stdin_task)
            .await
            .map_err(|e| SetupError(format!("cannot read the task from stdin: {e}")))??,
    };
    let mcp_ready = mcp_startup
        .ready(crate::mcp::grace(&files), mcp_joins)
        .await
        .map_err(|e| SetupError(e.to_string()))?;
    let mut config = AgentConfig::new(route.model.clone());
    config.max_output_tokens = route.model_config.max_output_tokens;
    if let Some(effort) = effort {
        config.effort = effort;
    }
    if let Some(max_steps) = args.max_steps {
        config.max_steps = max_steps;
    }
    // A new session gets the workspace instructions after its first task; a resumed one has
    // them in its history and gets only what changed since, after its new task.
    let defaults = InstructionSettings::default();
    let settings = InstructionSettings {
        enabled: files.instructions.enabled.unwrap_or(defaults.enabled),
        max_bytes: files.instructions.max_bytes.unwrap_or(defaults.max_bytes),
        root_markers: files
            .instructions
            .root_markers
            .clone()
            .unwrap_or(defaults.root_markers),
    };
    let default_home = std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".dsh"));
    let shown = if default_home.as_deref() == Some(home.as_path()) {
        "~/.dsh"
    } else {
        "$DSH_HOME"
    };
    config.instructions = if args.session_id.is_none() {
        dsh_core::instructions::baseline(&cwd, &home, shown, &settings)
    } else if !session.instructions_tracked() {
        // Logged before dsh recorded which files it delivered: what the model was given cannot
        // be compared with the files now, and sending them all again would repeat them.
        None
    } else {
        dsh_core::instructions::changes(
            &cwd,
            &home,
            shown,
            &settings,
            session.loaded_instructions(),
        )
    };
    config.nested_instructions = Some(settings);
    config.context_window = route
        .model_config
        .context_window
        .unwrap_or(route.window_default);
    if let Some(ms) = files.jobs.wait_ms {
        config.job_wait = std::time::Duration::from_millis(ms);
    }
    let policy = SandboxPolicy::new(mode, &cwd, add_dirs);
    config.context.push(dsh_sandbox::runtime_context(
        &policy,
        sandbox.settings().network,
        approval,
    ));
    let confining = mode != SandboxMode::DangerFullAccess;
    let mut tools = ToolRegistry::with_file_tools(confining);
    let skills = dsh_tools::skill::discover(&skill_roots(&cwd, &home, &files));
    if let Some(catalog) = dsh_tools::skill::catalog(&skills) {
        config.context.push(catalog);
        tools.register(Box::new(dsh_tools::skill::SkillTool::new(skills)));
    }
    if files.tools.str_replace_editor {
        tools.register(Box::new(StrReplaceEditor::default()));
    }
    // bash is offered in every mode, as the reference does: where no backend can confine a
    // command, each call is refused with SANDBOX_UNAVAILABLE and the model reads why.
    tools.add_shell_tools(confining);
    for group in mcp_ready.groups {
        tools.set_group(group);
    }
    tools.follow(mcp_ready.joins);
    let shell = Arc::new(Shell::new(shell_env, session.id(), sandbox));
    let model = ModelCaps {
        name: config.model.clone(),
        image_input: route
            .model_config
            .image_input
            .unwrap_or(route.image_default),
    };
    let tool_session =
        ToolSession::new(policy, SpillStore::new(session.dir().join("spill")), model)
            .with_attachments(AttachmentStore::new(home.join("attachments")))
            .with_approval(approval)
            .with_shell(shell.clone());
    let (tx, rx) = mpsc::unbounded_channel();
    let agent = Agent::new(
        Arc::new(provider),
        tools,
        Arc::new(tool_session),
        config,
        session,
        tx,
    );
    Ok(Ready {
        task,
        agent,
        events: rx,
        shell,
        prices: route.model_config.prices,
    })
}

/// The mode: `--permission-mode`, else `DSH_PERMISSION_MODE`, else `sandbox.mode`, else
/// workspace-write.
fn permission_mode(flag: Option<SandboxMode>, files: &Config) -> Result<SandboxMode, SetupError> {
    if let Some(mode) = flag {
        return Ok(mode);
    }
    if let Some(value) = std::env::var("DSH_PERMISSION_MODE")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        return value.trim().parse::<SandboxMode>().map_err(|_| {
            SetupError(format!(
                "DSH_PERMISSION_MODE must be read-only, workspace-write or danger-full-access, \
                 got \"{value}\""
            ))
        });
    }
    match &files.sandbox.mode {
        Some(name) => name
            .parse::<SandboxMode>()
            .map_err(|e| SetupError(format!("config sandbox.mode: {e}"))),
        None => Ok(SandboxMode::WorkspaceWrite),
    }
}

/// `--add-dir` grants: each an absolute path to an existing directory, given as its real path
/// (a symlinked or relative spelling could later point somewhere else).
fn check_add_dirs(dirs: &[std::path::PathBuf]) -> Result<Vec<std::path::PathBuf>, SetupError> {
    dirs.iter()
        .map(|dir| {
            let shown = dir.display();
            if !dir.is_absolute() {
                return Err(SetupError(format!(
                    "--add-dir \"{shown}\" is not an absolute path; give the directory's full \
                     real path"
                )));
            }
            let real = std::fs::canonicalize(dir).map_err(|e| {
                SetupError(format!(
                    "--add-dir \"{shown}\" cannot be used: {}; give an existing directory",
                    match e.kind() {
                        std::io::ErrorKind::NotFound => "it does not exist".to_owned(),
                        _ => e.to_string(),
                    }
                ))
            })?;
            if !real.is_dir() {
                return Err(SetupError(format!(
                    "--add-dir \"{shown}\" is not a directory; give a directory to make writable"
                )));
            }
            if real != *dir {
                return Err(SetupError(format!(
                    "--add-dir \"{shown}\" is not a physical path: it resolves to \"{}\"; \
                     give that path instead",
                    real.display()
                )));
            }
            Ok(real)
        })
        .collect()
}

/// The `[sandbox]` settings of the config files.
pub(crate) fn sandbox_settings(files: &Config) -> Result<SandboxSettings, SetupError> {
    let backend = match &files.sandbox.backend {
        Some(name) => name
            .parse::<BackendChoice>()
            .map_err(|e| SetupError(format!("config sandbox.backend: {e}")))?,
        None => BackendChoice::Auto,
    };
    Ok(SandboxSettings {
        backend,
        network: files.sandbox.network.unwrap_or(true),
        bwrap: files.sandbox.bwrap.clone(),
    })
}

/// Where skills are looked for, in rank order: the project's `.dsh/skills` and
/// `.agents/skills` (the project root being the nearest folder with `.git`, else the working
/// directory), `skills.dirs` from the config, `$DSH_HOME/skills`, `~/.agents/skills`; only
/// `skills.dirs` when `skills.default_roots` is false; none when `skills.enabled` is false.
fn skill_roots(
    cwd: &std::path::Path,
    home: &std::path::Path,
    files: &Config,
) -> Vec<std::path::PathBuf> {
    if files.skills.enabled == Some(false) {
        return Vec::new();
    }
    let dirs = files.skills.dirs.iter().map(|d| cwd.join(d));
    if files.skills.default_roots == Some(false) {
        return dirs.collect();
    }
    let root = dsh_core::instructions::project_root(cwd, &[".git".to_owned()]);
    let mut roots = vec![root.join(".dsh/skills"), root.join(".agents/skills")];
    roots.extend(dirs);
    roots.push(home.join("skills"));
    if let Some(user) = std::env::var_os("HOME") {
        roots.push(std::path::PathBuf::from(user).join(".agents/skills"));
    }
    roots
}

/// The whole of stdin, verbatim (a trailing newline included).
fn read_stdin_task() -> Result<String, SetupError> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| SetupError(format!("cannot read the task from stdin: {e}")))?;
    let task = String::from_utf8(bytes)
        .map_err(|_| SetupError("the task read from stdin is not UTF-8 text".into()))?;
    if task.trim().is_empty() {
        return Err(SetupError(TASK_REQUIRED.into()));
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
