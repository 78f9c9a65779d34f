//! Building a run from its [`Settings`]: the model's client, the sandbox, the shell, the tools,
//! MCP servers, skills, workspace instructions and the session. Every front end (headless
//! text, `--json`, and later the terminal UI and the ACP server) builds its run here, so they
//! differ only in how they render events and where input comes from.
//!
//! Building is two steps, so a front end can read its task in between:
//! [`AgentBuilder::start`] does everything that may fail without the task (a bad key, a
//! session that cannot be resumed) and starts the MCP servers, which get ready while the task
//! is read; [`StartedRun::finish`] waits for them and assembles the agent.

use std::ffi::OsString;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use dsh_llm::{Provider, Retrying};
use dsh_mcp::{McpServer, McpServers, McpStartup, Transport};
use dsh_sandbox::escalation::{ApprovalPolicy, Approver};
use dsh_sandbox::{Sandbox, SandboxMode, SandboxPolicy};
use dsh_tools::ToolGroup;
use dsh_tools::{
    AskUserQuestion, AttachmentStore, ExitPlanMode, ModelCaps, Shell, ShellEnv, SpillStore,
    StrReplaceEditor, TodoWrite, ToolFilter, ToolRegistry, ToolSession, UserQuestions,
};
use futures_util::future::BoxFuture;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use crate::auto_review::AutoReviewer;
use crate::config::{
    Compression, McpServerSettings, McpTransport, SettingRow, Settings, SetupError,
};
use crate::plan_approval::CurrentMode;
use crate::{Agent, AgentConfig, AgentEvent, CoreError, LogOptions, Session, Stop, TurnSummary};

/// Builds one run.
pub struct AgentBuilder {
    settings: Settings,
    user: User,
}

/// The person at an interactive front end: who approves escalations and answers the model's
/// questions. A headless run has neither, and both then fail closed at once.
#[derive(Clone, Default)]
pub struct User {
    pub approver: Option<Arc<dyn Approver>>,
    pub questions: Option<Arc<dyn UserQuestions>>,
    /// Whether commands' output is sent as it arrives ([`AgentEvent::ToolOutput`]), for a
    /// front end that shows it live.
    pub watches_output: bool,
    /// The editor whose files `read`, `edit` and `write` go through (an ACP client that
    /// offers its file system); none: the disk. Subagents use the disk.
    pub editor: Option<Arc<dyn dsh_tools::EditorFiles>>,
}

/// A run whose session is open and whose MCP servers are starting.
pub struct StartedRun {
    settings: Settings,
    user: User,
    output_schema: Option<Arc<crate::OutputSchema>>,
    hooks: crate::HookSet,
    provider: Arc<dyn Provider>,
    sandbox: Arc<Sandbox>,
    session: Session,
    shell_env: ShellEnv,
    mcp: McpServers,
    mcp_startup: McpStartup,
    mcp_joins: UnboundedReceiver<ToolGroup>,
    /// The user's notices (already redacting).
    notices: UnboundedSender<String>,
}

/// A run ready for its task.
pub struct Run {
    /// What the run was built with (a rewind's checkpoint store and coverage come from it).
    settings: Settings,
    pub agent: Agent,
    /// What the agent reports ([`Run::start_task`], [`Run::take_events`]); ends when the agent
    /// is dropped.
    events: UnboundedReceiver<AgentEvent>,
    /// The model has prices: every request's usage comes back with its cost (`costUsd`).
    pub priced: bool,
    /// The skills found for the run (name, description), as `/skills` lists them.
    pub skills: Vec<(String, String)>,
    /// The run's tools as front ends describe their calls ([`dsh_tools::ToolCatalog::describe`]): one
    /// lookup for every front end, which follows the tools that join later (MCP servers').
    pub catalog: crate::ToolCatalog,
    processes: Processes,
}

/// A task the agent is running ([`Run::start_task`]), and what it reports as it goes.
pub struct RunningTask<'a, F> {
    /// `None` once it has ended.
    running: Option<Pin<Box<F>>>,
    outcome: Option<Result<TurnSummary, CoreError>>,
    events: &'a mut UnboundedReceiver<AgentEvent>,
}

impl<F: Future<Output = Result<TurnSummary, CoreError>>> RunningTask<'_, F> {
    /// The next thing the agent reports; `None` once the task has ended and what it had
    /// reported by then has been handed over. Cancel-safe, so it can be one branch of a
    /// `select!` among others.
    pub async fn next_event(&mut self) -> Option<AgentEvent> {
        if let Some(running) = &mut self.running {
            // Events first: what the agent reported goes out before the task goes on (a
            // permission it asks an editor for follows the updates before it).
            tokio::select! {
                biased;
                Some(event) = self.events.recv() => return Some(event),
                outcome = running.as_mut() => {
                    self.running = None;
                    self.outcome = Some(outcome);
                }
            }
        }
        // What was reported before the end, still queued.
        self.events.try_recv().ok()
    }

    /// How the task ended ([`Agent::run`]'s summary). Called before [`RunningTask::next_event`]
    /// has returned `None`, it waits for the end and drops the events not handed over yet.
    pub async fn outcome(mut self) -> Result<TurnSummary, CoreError> {
        loop {
            if let Some(outcome) = self.outcome.take() {
                return outcome;
            }
            self.next_event().await;
        }
    }
}

/// What a run started outside the agent: commands' processes and MCP servers.
#[derive(Clone)]
pub struct Processes {
    shell: Arc<Shell>,
    mcp: McpServers,
    /// Where the user is told what the end of the run set aside.
    notices: UnboundedSender<String>,
}

impl Processes {
    /// Stops every process a command or a server started, and waits for them; then sets aside
    /// what commands whose results were never made (a run stopped in the middle of one)
    /// created at protected paths, and tells the user.
    pub async fn shutdown(&self) {
        let (set_aside, ()) = tokio::join!(self.shell.shutdown(), self.mcp.shutdown());
        for line in set_aside {
            let _ = self.notices.send(line);
        }
    }
}

impl Run {
    /// The session's turns, with what each changed in the files (`/rewind`'s list).
    pub fn turns(&mut self) -> Vec<crate::checkpoints::TurnFiles> {
        let (session, checkpointer) = self.agent.rewind_parts(&self.settings);
        crate::checkpoints::session_turns(&session.logged_records(), checkpointer)
    }

    /// Rewinds the session between turns ([`crate::checkpoints::rewind`]).
    pub fn rewind(
        &mut self,
        request: &crate::checkpoints::RewindRequest,
    ) -> Result<crate::checkpoints::RewindReport, crate::checkpoints::RewindError> {
        let (session, checkpointer) = self.agent.rewind_parts(&self.settings);
        let report = crate::checkpoints::rewind(session, checkpointer, request)?;
        // The conversation went back before instructions it was given: the next turn
        // delivers what the history no longer holds.
        if report.applied.as_ref().is_some_and(|r| r.conversation) {
            let settings = &self.settings;
            let instructions = crate::instructions::for_next_turn(
                settings.cwd(),
                &settings.home().value,
                settings.home_shown(),
                settings.instructions(),
                Some(self.agent.session()),
            );
            self.agent.set_instructions(instructions);
            self.agent.goal_rewound();
        }
        Ok(report)
    }

    /// Starts `task` as [`Agent::run`] does. Its events come from
    /// [`RunningTask::next_event`], which a front end awaits beside its own sources (a cancel,
    /// lines of input, notices) in one `select!`.
    pub fn start_task<'a>(
        &'a mut self,
        task: String,
        stop: &'a Stop,
    ) -> RunningTask<'a, impl Future<Output = Result<TurnSummary, CoreError>> + 'a> {
        self.start_task_with_images(task, Vec::new(), stop)
    }

    /// [`Run::start_task`] for a task with images attached ([`Agent::run_with_images`]).
    pub fn start_task_with_images<'a>(
        &'a mut self,
        task: String,
        images: Vec<dsh_protocol::ImageRef>,
        stop: &'a Stop,
    ) -> RunningTask<'a, impl Future<Output = Result<TurnSummary, CoreError>> + 'a> {
        RunningTask {
            running: Some(Box::pin(self.agent.run_with_images(task, images, stop))),
            outcome: None,
            events: &mut self.events,
        }
    }

    /// What the agent reports, for a front end that reads it apart from the tasks it starts
    /// (the terminal UI's screen, while its host runs them). The run keeps a closed receiver:
    /// [`RunningTask::next_event`] then hands over nothing but the task's end.
    pub fn take_events(&mut self) -> UnboundedReceiver<AgentEvent> {
        std::mem::replace(&mut self.events, mpsc::unbounded_channel().1)
    }

    /// The processes to stop once the agent is done.
    pub fn processes(&self) -> Processes {
        self.processes.clone()
    }

    /// Ends the run: drops the agent (its log is whole after every record, and its lock is
    /// let go) and stops every process it started, waiting for them.
    pub async fn close(self) {
        let processes = self.processes();
        drop(self);
        processes.shutdown().await;
    }
}

impl AgentBuilder {
    pub fn new(settings: Settings) -> Self {
        AgentBuilder {
            settings,
            user: User::default(),
        }
    }

    /// The run with someone at the terminal (or editor) to ask.
    pub fn with_user(mut self, user: User) -> Self {
        self.user = user;
        self
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Starts and finishes the run ([`AgentBuilder::start`], [`StartedRun::finish`]); when
    /// it cannot, the MCP servers it started are stopped before the error is returned.
    pub async fn open(
        self,
        mcp: &McpServers,
        notices: UnboundedSender<String>,
    ) -> Result<Run, SetupError> {
        let opened = match self.start(mcp, notices) {
            Ok(started) => started.finish().await,
            Err(error) => Err(error),
        };
        if opened.is_err() {
            mcp.shutdown().await;
        }
        opened
    }

    /// Connects the model's client, opens the session (a resumed one is found, locked and
    /// repaired: a wrong id costs nothing) and starts the MCP servers, registered with `mcp`
    /// before anything spawns so that whoever holds it can stop them, however the run ends.
    /// `notices` gets lines for the user from outside the agent's events (servers' stderr).
    /// Must be called within a Tokio runtime.
    ///
    /// [`AgentBuilder::open`] does this and [`StartedRun::finish`] in one, for a front end
    /// with nothing to do in between.
    pub fn start(
        self,
        mcp: &McpServers,
        notices: UnboundedSender<String>,
    ) -> Result<StartedRun, SetupError> {
        let AgentBuilder { mut settings, user } = self;
        let chosen = crate::session_list::chosen_session(&settings)?;
        check_mcp_tool_names(&settings)?;
        // What the user is told from outside the agent (a server's stderr, a skipped hook)
        // can quote a key too.
        let notices = redacting(notices, settings.redactor());
        let output_schema = match &settings.output_schema().value {
            Some(path) => Some(Arc::new(crate::OutputSchema::load(path)?)),
            None => None,
        };
        let hooks = crate::HookSet::load(&settings.home().value, settings.cwd())?;
        for skipped in &hooks.skipped {
            let _ = notices.send(skipped.clone());
        }
        let provider = settings.route().connect(settings.idle_timeout().value)?;
        let provider: Arc<dyn Provider> = Arc::new(Retrying::new(provider, *settings.retry()));
        let sandbox = Arc::new(Sandbox::new(settings.sandbox().clone()));
        let log_options = LogOptions {
            fsync: settings.fsync().value,
            zstd: settings.compression().value == Compression::Zstd,
        };
        let home = settings.home().value.clone();
        let cwd = settings.cwd().clone();
        let session = match &chosen {
            Some(id) if settings.fork() => Session::fork(&home, cwd, id, log_options),
            Some(id) => Session::resume(&home, cwd, id, log_options),
            None => Ok(Session::create(&home, cwd, log_options)),
        }
        .map_err(|e| SetupError::new(e.code(), e.to_string()))?;
        let mut session = session;
        session.redact_failures(settings.redactor());
        keep_permissions(&mut settings, &mut session)?;
        let mut shell_env = ShellEnv::new(vec![
            ("DSH_HOME".into(), home.into_os_string()),
            ("DSH_SESSION_ID".into(), session.id().into()),
            (
                "DSH_SESSION_JSONL".into(),
                session.log_path().as_os_str().to_owned(),
            ),
        ]);
        shell_env.scrub.clone_from(&settings.scrub().value);
        // The run's own key variables, whatever their names: `shell.scrub` may not catch them.
        shell_env
            .scrub_names
            .extend(settings.key_variables().iter().cloned());
        // A server whose every tool is withheld is not started at all.
        let servers = settings
            .mcp_servers()
            .iter()
            .filter(|server| {
                settings
                    .tool_filter()
                    .may_allow_some(&format!("mcp__{}__", server.name))
            })
            .map(|server| McpServer {
                name: server.name.clone(),
                transport: transport(server, &settings.home().value, &shell_env),
                call_timeout: server.call_timeout,
                startup_timeout: server.startup_timeout,
                fail_on_startup_error: server.fail_on_startup_error,
            })
            .collect();
        mcp.redact_with(settings.redactor());
        mcp.answer_with(user.questions.clone());
        let (mcp_startup, mcp_joins) = McpStartup::begin(mcp, servers, notices.clone());
        Ok(StartedRun {
            settings,
            user,
            output_schema,
            hooks,
            provider,
            sandbox,
            session,
            shell_env,
            mcp: mcp.clone(),
            mcp_startup,
            mcp_joins,
            notices,
        })
    }
}

/// A tool list's `mcp__<server>__...` name must name one of the run's MCP servers (the
/// config's, and in an editor its own): else it covers no tool, and the list does not do what
/// it was written for.
fn check_mcp_tool_names(settings: &Settings) -> Result<(), SetupError> {
    let servers: Vec<&str> = (settings.mcp_servers().iter())
        .map(|server| server.name.as_str())
        .collect();
    let Some(name) = settings.tool_filter().unknown_server_name(&servers) else {
        return Ok(());
    };
    let servers = if servers.is_empty() {
        "this run has no MCP server (declare one under [mcp.servers.<name>])".to_owned()
    } else {
        format!("this run's MCP servers are {}", servers.join(", "))
    };
    Err(SetupError::config(format!(
        "the tool list names \"{name}\", which covers no tool: {servers}; name a tool as \
         mcp__<server>__<tool> (a trailing * covers several) or a built-in tool ({})",
        dsh_config::BUILTIN_TOOLS.join(", ")
    )))
}

impl StartedRun {
    pub fn session_id(&self) -> &str {
        self.session.id()
    }

    /// Waits for the MCP servers that must start (and up to `mcp.startup_grace_ms` for the
    /// others), then assembles the agent: its tools, system prompt context, instructions and
    /// skills.
    ///
    /// Boxed so that it is compiled once, here, and not in every front end that awaits it.
    pub fn finish(self) -> BoxFuture<'static, Result<Run, SetupError>> {
        Box::pin(self.assemble())
    }

    async fn assemble(self) -> Result<Run, SetupError> {
        let StartedRun {
            settings,
            user,
            output_schema,
            hooks,
            provider,
            sandbox,
            session,
            shell_env,
            mcp,
            mcp_startup,
            mcp_joins,
            notices,
        } = self;
        let mcp_ready = mcp_startup
            .ready(settings.mcp_grace().value, mcp_joins)
            .await
            .map_err(|e| {
                let message = dsh_tools::redacted(settings.redactor().as_ref(), e.to_string());
                SetupError::new("MCP_STARTUP", message)
            })?;
        let route = settings.route();
        let mut config = agent_config(&settings);
        // The run's caps are the top agent's: a child's requests are its parent's calls, and
        // what children bill is in the parent's steps, so the budget covers them.
        config.max_requests = settings.max_turns().value;
        config.output_schema = output_schema;
        // Settings refuse a budget without prices, so every request comes back priced.
        config.budget = settings
            .max_budget_usd()
            .value
            .map(crate::config::Usd::value);
        // A new session gets the workspace instructions after its first task; a resumed one
        // has them in its history and gets only what changed since, after its new task.
        let (cwd, instructions) = (settings.cwd(), settings.instructions());
        config.instructions = crate::instructions::for_next_turn(
            cwd,
            &settings.home().value,
            settings.home_shown(),
            instructions,
            settings.session().is_some().then_some(&session),
        );
        config.nested_instructions = Some(instructions.clone());
        let mode = settings.permission_mode().value.sandbox();
        let approval = settings.approval().value;
        let policy = SandboxPolicy::new(mode, cwd, settings.add_dirs().value.clone())
            .with_dsh_home(&settings.home().value);
        config.context.push(dsh_sandbox::runtime_context(
            &policy,
            settings.sandbox().network,
            approval,
        ));
        let mode = settings.permission_mode().value;
        let current_mode = CurrentMode::new(mode);
        config.mode = Some(current_mode.clone());
        // In plan mode with someone to approve the plan, a reviewer stands by in case they
        // pick Auto review for carrying it out.
        let reviewer = auto_reviewer(&settings, &provider, user.questions.is_some())?;
        if mode.is_auto() {
            config.reviewer.clone_from(&reviewer);
            config.context.push(AUTO_REVIEW_CONTEXT.to_owned());
        } else {
            config.standby_reviewer.clone_from(&reviewer);
        }
        let BaseTools {
            mut tools,
            catalog,
            skills,
            skill_problems,
        } = base_tools(&settings);
        // A skill that cannot be loaded is left out, and the user told which and why.
        for problem in skill_problems {
            let _ = notices.send(problem);
        }
        config.context.extend(catalog);
        for group in mcp_ready.groups {
            tools.set_group(group);
        }
        tools.follow(mcp_ready.joins);
        // What the commands of a run that died outright (SIGKILL, a crash) created at
        // protected paths, set aside now; this run's own watches are written down there too.
        let journal = settings.home().value.join("pending-set-aside");
        for line in dsh_tools::settle_left_over(&journal) {
            let _ = notices.send(line);
        }
        let shell = Arc::new(
            Shell::new(shell_env, session.id(), sandbox)
                .with_pending(dsh_tools::PendingWatches::with_journal(journal)),
        );
        let (tx, events) = mpsc::unbounded_channel();
        let progress = user.watches_output.then(|| {
            let tx = tx.clone();
            // Live output is redacted too. bash's comes from its redacting capture, which
            // holds back a secret's start until the next read settles it; what other tools
            // report as they go is redacted chunk by chunk here.
            let redactor = settings.redactor();
            let progress: dsh_tools::ToolProgress = Arc::new(move |call_id: &str, text: &str| {
                let text = dsh_tools::redacted(redactor.as_ref(), text.to_owned());
                let _ = tx.send(AgentEvent::ToolOutput {
                    call_id: call_id.to_owned(),
                    text,
                });
            });
            progress
        });
        config.hooks = (!hooks.is_empty()).then(|| {
            Arc::new(crate::HookRunner {
                hooks,
                redactor: settings.redactor(),
                subagent: false,
                shell: shell.clone(),
                policy: policy.clone(),
                cwd: settings.cwd().clone(),
                session_id: session.id().to_owned(),
                transcript: session.log_path().to_path_buf(),
                events: tx.clone(),
            })
        });
        let tool_session = tool_session(
            &settings,
            policy,
            approval,
            mode.is_plan(),
            shell.clone(),
            SpillStore::new(session.dir().join("spill")),
        )
        .with_user(user.approver, user.questions)
        .with_progress(progress)
        .with_editor(user.editor);
        // Subagents: built from the same settings, model and shell.
        let history = Arc::new(std::sync::Mutex::new(Vec::new()));
        config.completed_history = Some(history.clone());
        // A subagent's tool calls have the same hooks, so a blocked call cannot be routed
        // through one.
        let child_hooks = (config.hooks.as_deref()).map(|top| {
            Arc::new(crate::HookRunner {
                subagent: true,
                ..top.clone()
            })
        });
        let kit = child_kit(
            Arc::new(settings.clone()),
            provider.clone(),
            shell.clone(),
            child_hooks,
            reviewer,
            current_mode,
        );
        let background = crate::subagents::BackgroundAgents::new();
        // A resumed session's background children take messages again; new ids follow theirs.
        background.recorded(session.children());
        kit.number_after(session.children());
        config.background = Some(background.clone());
        crate::subagents::register(
            &mut tools,
            &kit,
            0,
            session.id(),
            history,
            tx.clone(),
            &background,
        );
        // The goal tools are the top agent's: a subagent works for it, not toward a goal.
        let goals = Arc::new(crate::goals::GoalBoard::new(
            session.goal_change().map(|change| change.goal.clone()),
            settings.goals(),
        ));
        for tool in crate::goals::goal_tools(&goals) {
            tools.register(tool);
        }
        if crate::goals::TOOL_NAMES
            .iter()
            .any(|name| tools.names().any(|offered| offered == *name))
        {
            config.goals = Some(goals);
        }
        // A tool whose facts name an argument its schema lacks (one renamed, say) would be
        // described wrongly by every front end: every debug build, the test suite's, stops.
        debug_assert_eq!(tools.description_problems(), Vec::<String>::new());
        debug_assert_eq!(unlisted_tools(&tools), Vec::<String>::new());
        let catalog = tools.catalog();
        // Checkpoints nobody names any more go first, at most once a day.
        if settings.checkpoints().enabled {
            crate::checkpoints::prune(&settings);
        }
        let checkpointer = crate::checkpoints::Checkpointer::for_run(&settings);
        let mut agent = Agent::new(provider, tools, Arc::new(tool_session), config, session, tx);
        agent.set_checkpointer(checkpointer);
        let priced = route.prices.value.is_some();
        Ok(Run {
            settings,
            agent,
            events,
            priced,
            skills,
            catalog,
            processes: Processes {
                shell,
                mcp,
                notices,
            },
        })
    }
}

/// What the model is told of Auto review.
const AUTO_REVIEW_CONTEXT: &str = "Auto review is on: before any call that could change \
something runs (a command, a file change, an MCP tool that is not read-only), a separate \
reviewer model reads the task, the latest messages and the call, and allows or denies it. A \
denied call did not run and fails with AUTO_REVIEW_DENIED and the reviewer's reason: take the \
reason into account and change the approach instead of repeating the call. \
AUTO_REVIEW_FAILED means the review itself failed and the call did not run.";

/// The run's Auto reviewer, over its own route when `auto_review.model` names one, else the
/// session's: in `--permission-mode auto`, and in plan mode when someone can approve the plan
/// (`approves_plans`) and may pick Auto review for it. There a reviewer whose route cannot
/// connect (its key missing) only means Auto review is not offered.
fn auto_reviewer(
    settings: &Settings,
    provider: &Arc<dyn Provider>,
    approves_plans: bool,
) -> Result<Option<Arc<AutoReviewer>>, SetupError> {
    let mode = settings.permission_mode().value;
    let standby = mode.is_plan() && approves_plans;
    if !mode.is_auto() && !standby {
        return Ok(None);
    }
    let own = match &settings.auto_review().route {
        None => None,
        Some(route) => match route.connect(settings.idle_timeout().value) {
            Ok(own) => Some(Arc::new(Retrying::new(own, *settings.retry())) as Arc<dyn Provider>),
            Err(_) if standby => return Ok(None),
            Err(error) => return Err(error),
        },
    };
    Ok(Some(Arc::new(AutoReviewer::new(
        settings,
        provider.clone(),
        own,
    ))))
}

/// How the agent drives the model, by the settings.
fn agent_config(settings: &Settings) -> AgentConfig {
    let route = settings.route();
    let mut config = AgentConfig::new(route.model.clone());
    config.max_output_tokens = route.max_output_tokens.value;
    config.effort = settings.effort().value;
    config.max_steps = settings.max_steps().value;
    config
        .system_append
        .clone_from(&settings.system_prompt_append().value);
    config.context_window = route.context_window.value;
    config.job_wait = settings.job_wait().value;
    config
}

/// The tools' side of an agent's session.
fn tool_session(
    settings: &Settings,
    policy: SandboxPolicy,
    approval: ApprovalPolicy,
    plan_mode: bool,
    shell: Arc<Shell>,
    spill: SpillStore,
) -> ToolSession {
    let model = ModelCaps {
        name: settings.route().model.clone(),
        image_input: settings.route().image_input.value,
    };
    ToolSession::new(policy, spill, model)
        .with_attachments(AttachmentStore::new(
            settings.home().value.join("attachments"),
        ))
        .with_approval(approval)
        .with_plan_mode(plan_mode)
        // Jobs nobody can read are not started: commands past their timeout stop.
        .with_background_jobs(settings.tool_filter().allows("job_output"))
        .with_shell(shell)
        .with_redactor(settings.redactor())
}

/// What the run's subagents are built from: the same model, shell, tools and prompt facts as
/// the top agent, under the approval policy `never` (a child never asks), optionally a
/// read-only sandbox and a narrower tool list, and never `ask_user_question`. MCP tools stay
/// with the top agent.
fn child_kit(
    settings: Arc<Settings>,
    provider: Arc<dyn Provider>,
    shell: Arc<Shell>,
    hooks: Option<Arc<crate::HookRunner>>,
    reviewer: Option<Arc<AutoReviewer>>,
    current_mode: CurrentMode,
) -> Arc<crate::subagents::ChildKit> {
    let limits = *settings.subagents();
    let bounds = settings.workflows();
    let workflows = dsh_workflow::Limits {
        memory_bytes: usize::try_from(bounds.max_memory_mb.saturating_mul(1 << 20))
            .unwrap_or(usize::MAX),
        time: bounds.time,
        max_agents: u32::try_from(bounds.max_agents).unwrap_or(u32::MAX),
        ..dsh_workflow::Limits::default()
    };
    crate::subagents::ChildKit::new(
        limits,
        workflows,
        Box::new(move |spec: crate::subagents::ChildSpec| {
            // The mode now: a plan approved since the run began may have changed it.
            let current = current_mode.get();
            let mode = if spec.read_only {
                SandboxMode::ReadOnly
            } else {
                current.sandbox()
            };
            let policy =
                SandboxPolicy::new(mode, settings.cwd(), settings.add_dirs().value.clone())
                    .with_dsh_home(&settings.home().value);
            let approval = ApprovalPolicy::Never;
            let mut config = agent_config(&settings);
            config.hooks.clone_from(&hooks);
            config.context.push(dsh_sandbox::runtime_context(
                &policy,
                settings.sandbox().network,
                approval,
            ));
            // A child works as its parent does, so its calls are reviewed as its parent's are:
            // a read-only child too, whose commands keep the network and can read anything.
            if current.is_auto() && reviewer.is_some() {
                config.reviewer.clone_from(&reviewer);
                config.context.push(AUTO_REVIEW_CONTEXT.to_owned());
            }
            config.context.push(DELEGATED.to_owned());
            config.delegated = true;
            let BaseTools {
                mut tools, catalog, ..
            } = base_tools(&settings);
            config.context.extend(catalog);
            let mut deny = settings.tool_filter().deny.clone();
            deny.push("ask_user_question".to_owned());
            tools.restrict(ToolFilter {
                allow: spec.allow.or_else(|| settings.tool_filter().allow.clone()),
                deny,
            });
            if !spec.fork {
                // A fork has them in the history it begins with.
                config.instructions = crate::instructions::for_next_turn(
                    settings.cwd(),
                    &settings.home().value,
                    settings.home_shown(),
                    settings.instructions(),
                    None,
                );
            }
            config.nested_instructions = Some(settings.instructions().clone());
            let tool_session = tool_session(
                &settings,
                policy,
                approval,
                current.is_plan(),
                Arc::new(shell.for_child()),
                SpillStore::new(std::path::PathBuf::new()),
            );
            crate::subagents::ChildParts {
                settings: settings.clone(),
                provider: provider.clone(),
                tools,
                tool_session,
                config,
                session_home: settings.home().value.clone(),
                cwd: settings.cwd().clone(),
                log_options: LogOptions {
                    fsync: settings.fsync().value,
                    zstd: settings.compression().value == Compression::Zstd,
                },
            }
        }),
    )
}

/// Told to every subagent, after the sandbox facts.
const DELEGATED: &str = "You are a subagent: another agent gave you this task, and your final \
     answer is what it receives, so make it complete and self-contained (conclusions, and the \
     paths of what you changed). Your permissions were fixed when you were started: a request \
     for a wider sandbox is refused, so if the task needs more, say so in your answer instead \
     of retrying.";

/// The tools of `tools` that are neither MCP tools nor in [`dsh_config::BUILTIN_TOOLS`].
fn unlisted_tools(tools: &ToolRegistry) -> Vec<String> {
    (tools.names())
        .filter(|name| !name.starts_with("mcp__") && !dsh_config::BUILTIN_TOOLS.contains(name))
        .map(str::to_owned)
        .collect()
}

/// The tools a run offers before its MCP servers join, and what they say of its skills.
struct BaseTools {
    tools: ToolRegistry,
    /// The skill catalog for the system prompt, when there are skills.
    catalog: Option<String>,
    /// Every skill found (name, description), for a front end to list.
    skills: Vec<(String, String)>,
    /// Each skill that could not be loaded: which, and why.
    skill_problems: Vec<String>,
}

fn base_tools(settings: &Settings) -> BaseTools {
    let mode = settings.permission_mode().value;
    let confining = mode.sandbox() != SandboxMode::DangerFullAccess;
    let mut tools = ToolRegistry::with_file_tools(confining);
    tools.register(Box::new(TodoWrite::default()));
    tools.register(Box::new(dsh_tools::Present::default()));
    // No one answers in a run built here yet: the tool tells the model so at once.
    tools.register(Box::new(AskUserQuestion::default()));
    let (web_fetch, web_search) = dsh_web::tools(settings.web().clone());
    tools.register(Box::new(web_fetch));
    // Offered only where a backend can serve it: a tool whose every call fails is noise in
    // the prompt (`--dump-config` says why it is off).
    if settings.web().search.is_ok() {
        tools.register(Box::new(web_search));
    }
    if mode.is_plan() {
        tools.register(Box::new(ExitPlanMode::default()));
    } else {
        tools.answer_unoffered(Box::new(ExitPlanMode::default()));
    }
    let dsh_tools::skill::Discovered {
        skills,
        problems: skill_problems,
    } = dsh_tools::skill::discover(&settings.skill_roots());
    // A skill's description is the workspace's text, like a file a tool reads: the run's
    // secrets come out of it before it reaches the prompt or a front end's list.
    let redactor = settings.redactor();
    let redact = |text: String| dsh_tools::redacted(redactor.as_ref(), text);
    let catalog = dsh_tools::skill::catalog(&skills).map(redact);
    let listed = (skills.iter())
        .map(|skill| (skill.name.clone(), redact(skill.description.clone())))
        .collect();
    if catalog.is_some() {
        tools.register(Box::new(dsh_tools::skill::SkillTool::new(skills)));
    } else {
        tools.answer_unoffered(Box::new(dsh_tools::skill::SkillTool::new(Vec::new())));
    }
    if settings.str_replace_editor().value {
        tools.register(Box::new(StrReplaceEditor::default()));
    }
    // bash is offered in every mode, as the reference does: where no backend can confine a
    // command, each call is refused with SANDBOX_UNAVAILABLE and the model reads why.
    tools.add_shell_tools(confining);
    tools.restrict(settings.tool_filter().clone());
    BaseTools {
        tools,
        catalog,
        skills: listed,
        skill_problems,
    }
}

/// A resumed session goes on under the permission mode and approval policy it recorded,
/// unless a flag changes them; the permissions in effect are recorded whenever they are new to
/// the session (a new one, or a change on a resume).
fn keep_permissions(settings: &mut Settings, session: &mut Session) -> Result<(), SetupError> {
    if let Some(recorded) = session.permission() {
        settings.keep_session_permissions(&recorded.mode, &recorded.approval);
    }
    let current = dsh_protocol::PermissionRecord {
        mode: settings.permission_mode().value.to_string(),
        approval: settings.approval().value.to_string(),
        source: settings.permission_mode().source.to_string(),
    };
    let unchanged = session
        .permission()
        .is_some_and(|r| r.mode == current.mode && r.approval == current.approval);
    if !unchanged {
        session.commit(dsh_protocol::Record::PermissionMode(current))?;
    }
    Ok(())
}

/// Every setting a run with `settings` uses, with its source, as `--dump-config` prints them:
/// the resolved settings, the tools the model is offered and the session chosen (for
/// `--continue`, found among the session logs, so a missing one fails here as the run would).
pub fn setting_rows(settings: &Settings) -> Result<Vec<SettingRow>, SetupError> {
    let session = crate::session_list::chosen_session(settings)?;
    // A resumed session's own permissions are what the run would use.
    let recorded = session.as_deref().and_then(|id| {
        let path = crate::session_log_path(&settings.home().value, settings.cwd(), id).ok()?;
        let log = crate::read_log(&path).ok()?;
        log.records
            .into_iter()
            .rev()
            .find_map(|envelope| match envelope.record {
                dsh_protocol::Record::PermissionMode(permission) => Some(permission),
                _ => None,
            })
    });
    let mut settings = settings.clone();
    if let Some(recorded) = recorded.filter(|_| !settings.fork()) {
        settings.keep_session_permissions(&recorded.mode, &recorded.approval);
    }
    Ok(settings.rows(offered_tools(&settings), session.as_deref()))
}

/// The names of the tools a run with these settings offers: the built-in ones, then each MCP
/// server's as `mcp__<server>__*` (their tools are known once the server has started).
fn offered_tools(settings: &Settings) -> Vec<String> {
    let tools = base_tools(settings).tools;
    let mut names: Vec<String> = tools.names().map(str::to_owned).collect();
    names.extend(
        crate::subagents::offered(settings.tool_filter())
            .into_iter()
            .chain(crate::goals::TOOL_NAMES)
            .filter(|name| settings.tool_filter().allows(name))
            .map(str::to_owned),
    );
    names.sort();
    names.extend(
        settings
            .mcp_servers()
            .iter()
            .map(|server| format!("mcp__{}__", server.name))
            .filter(|prefix| settings.tool_filter().may_allow_some(prefix))
            .map(|prefix| format!("{prefix}*")),
    );
    names
}

/// What `dsh-mcp` starts for a server. A stdio server inherits the environment commands get
/// (secrets and `DSH_*` scrubbed) plus its own `env`.
fn transport(server: &McpServerSettings, home: &Path, shell_env: &ShellEnv) -> Transport {
    match &server.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut inherited: Vec<(OsString, OsString)> = std::env::vars_os()
                .filter(|(name, _)| !shell_env.scrubs(name))
                .collect();
            for (key, value) in env {
                inherited.retain(|(name, _)| name.as_os_str() != key.as_str());
                inherited.push((key.into(), value.into()));
            }
            Transport::Stdio {
                command: command.into(),
                args: args.iter().map(Into::into).collect(),
                env: inherited,
                cwd: cwd.clone(),
            }
        }
        McpTransport::Http { url, headers, .. } => Transport::Http {
            url: url.clone(),
            headers: headers.clone(),
            oauth: server.oauth_setup(home),
        },
    }
}

/// `notices` with the secrets taken out of each line on its way, when there are secrets.
fn redacting(
    notices: UnboundedSender<String>,
    redactor: Option<dsh_tools::Redactor>,
) -> UnboundedSender<String> {
    let Some(redactor) = redactor else {
        return notices;
    };
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            if notices.send(redactor.redact(&line).into_owned()).is_err() {
                break;
            }
        }
    });
    tx
}
