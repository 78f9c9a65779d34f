//! The composition root: a run built from its [`Settings`]. Every front end (headless text,
//! `--json`, the terminal UI, ACP, the MCP server mode, the web app) builds its run here, so
//! they differ only in how they render events and where input comes from.
//!
//! Building is two steps, so a front end can read its task in between:
//! [`AgentBuilder::start`] does everything that may fail without the task (a bad key, a
//! session that cannot be resumed) and starts the MCP servers, which get ready while the task
//! is read; [`StartedRun::finish`] waits for them and wires the agent: each feature installs
//! itself ([`INSTALLS`], `install.rs`), and subagents are wired by the same list.

use std::sync::Arc;

use dsh_llm::{Provider, Retrying};
use dsh_mcp::McpServers;
use dsh_sandbox::Sandbox;
use dsh_sandbox::escalation::Approver;
use dsh_tools::{Shell, ShellEnv, UserQuestions};
use futures_util::future::BoxFuture;
use tokio::sync::mpsc::{self, UnboundedSender};

use crate::config::{SettingRow, Settings, SetupError};
use crate::install::{Install, Role, Seat, TopSeat, Wiring};
use crate::plan_approval::CurrentMode;
use crate::{AgentEvent, LogOptions, Processes, Run, Session};

/// Each feature's install, in the order they wire an agent: the built-in tools and skills,
/// then the MCP servers' tools, Auto review, the subagent tools, the goal tools, the workspace
/// instructions, the hooks and the checkpoints. The model is offered the tools in this
/// order, and told the sandbox's facts, Auto review's, a subagent's and the skill catalog in
/// this order.
const INSTALLS: &[Install] = &[
    crate::builtins::install,
    crate::mcp::install,
    crate::host_tools::install::install,
    crate::auto_review::install::install,
    crate::subagents::install::install,
    crate::goals::install::install,
    crate::instructions::install::install,
    crate::hooks::install::install,
    crate::checkpoints::install::install,
];

/// Builds one run.
pub struct AgentBuilder {
    settings: Settings,
    user: User,
}

/// The person at an interactive front end, made by [`User::asking`]: who approves escalations
/// and answers the model's questions, through the requests the front end reads. A headless run
/// has none (`User::default()`), and every request then fails closed at once.
#[derive(Clone, Default)]
pub struct User {
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) questions: Option<Arc<dyn UserQuestions>>,
    /// Whether commands' output is sent as it arrives ([`AgentEvent::ToolOutput`]), for a
    /// front end that shows it live.
    pub(crate) watches_output: bool,
    /// The editor whose files `read`, `edit` and `write` go through (an ACP client that
    /// offers its file system); none: the disk. Subagents use the disk.
    pub(crate) editor: Option<Arc<dyn dsh_tools::EditorFiles>>,
    /// The tools its client runs ([`User::with_host_tools`]).
    pub(crate) host_tools: Option<crate::host_tools::HostTools>,
}

impl User {
    /// The user whose client runs `tools`: offered to the model beside dsh's own, their calls
    /// arrive on the returned receiver for the front end to hand to the client. Checked with
    /// [`crate::HostTool::check`] first.
    pub fn with_host_tools(
        mut self,
        tools: Vec<crate::HostTool>,
    ) -> Result<(User, mpsc::UnboundedReceiver<crate::HostCall>), crate::HostToolError> {
        crate::HostTool::check(&tools)?;
        let (calls, received) = mpsc::unbounded_channel();
        self.host_tools = Some(crate::host_tools::HostTools::new(tools, calls));
        Ok((self, received))
    }
}

/// A run whose session is open and whose MCP servers are starting: what the agent is wired
/// from once they are ready.
pub struct StartedRun {
    settings: Settings,
    user: User,
    provider: Arc<dyn Provider>,
    session: Session,
    /// The user's hooks, read as the run started.
    hooks: crate::HookSet,
    output_schema: Option<Arc<crate::OutputSchema>>,
    /// The run's shell, and its MCP servers and notices: what the run stops and tells at its
    /// end.
    processes: Processes,
    mcp: crate::mcp::Starting,
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
        crate::mcp::check_tool_names(&settings)?;
        // What the user is told from outside the agent (a server's stderr, a skipped hook)
        // can quote a key too.
        let notices = redacting(notices, settings.redactor());
        let output_schema = match &settings.output_schema().value {
            Some(path) => Some(Arc::new(crate::OutputSchema::load(path)?)),
            None => None,
        };
        // What the workspace's config may not decide until the folder is trusted, and how to
        // trust it: said by every front end, before anything the run starts.
        if let Some(notice) = settings.files().trust_notice() {
            let _ = notices.send(notice);
        }
        let hooks = crate::hooks::install::load(&settings, &notices)?;
        let provider = crate::client::connect(settings.route(), settings.idle_timeout().value)?;
        let provider: Arc<dyn Provider> = Arc::new(Retrying::new(provider, *settings.retry()));
        let sandbox = Arc::new(Sandbox::new(settings.sandbox().clone()));
        let (home, cwd) = (settings.home().value.clone(), settings.cwd().clone());
        let log_options = LogOptions::of(&settings);
        let mut session = match &chosen {
            Some(id) if settings.fork() => Session::fork(&home, cwd, id, log_options),
            Some(id) => Session::adopt(&home, cwd, id, log_options),
            None => Ok(Session::create(&home, cwd, log_options)),
        }
        .map_err(|e| SetupError::new(e.code(), e.to_string()))?;
        session.redact_failures(settings.redactor());
        keep_permissions(&mut settings, &mut session)?;
        let shell_env = shell_env(&settings, &session);
        let starting = crate::mcp::start(
            mcp,
            &settings,
            &shell_env,
            user.questions.clone(),
            notices.clone(),
        );
        // This run's watches are written down where a later run settles them, should this one
        // die outright (SIGKILL, a crash).
        let journal = settings.home().value.join("pending-set-aside");
        let shell = Shell::new(shell_env, session.id(), sandbox)
            .with_pending(dsh_tools::PendingWatches::with_journal(journal));
        Ok(StartedRun {
            settings,
            user,
            provider,
            session,
            hooks,
            output_schema,
            processes: Processes {
                shell: Arc::new(shell),
                mcp: mcp.clone(),
                notices,
            },
            mcp: starting,
        })
    }
}

/// The environment the run's commands get: the launch environment, scrubbed of secrets, with
/// the session named.
fn shell_env(settings: &Settings, session: &Session) -> ShellEnv {
    let mut shell_env = ShellEnv::new(vec![
        (
            "DSH_HOME".into(),
            settings.home().value.clone().into_os_string(),
        ),
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
    shell_env
}

impl StartedRun {
    pub fn session_id(&self) -> &str {
        self.session.id()
    }

    /// Waits for the MCP servers that must start (and up to `mcp.startup_grace_ms` for the
    /// others), then wires the agent: its tools, system prompt context, instructions and
    /// skills.
    ///
    /// Boxed so that it is compiled once, here, and not in every front end that awaits it.
    pub fn finish(self) -> BoxFuture<'static, Result<Run, SetupError>> {
        Box::pin(self.assemble())
    }

    async fn assemble(self) -> Result<Run, SetupError> {
        let mcp = self.mcp.ready(&self.settings).await?;
        let settings = Arc::new(self.settings);
        let mode = settings.permission_mode().value;
        // In plan mode with someone to approve the plan, a reviewer stands by in case they
        // pick Auto review for carrying it out.
        let approves_plans = self.user.questions.is_some();
        let reviewer =
            crate::auto_review::install::reviewer(&settings, &self.provider, approves_plans)?;
        let (tx, events) = mpsc::unbounded_channel();
        let shell = self.processes.shell.clone();
        let hooks = crate::hooks::install::top_runner(
            self.hooks,
            &settings,
            &shell,
            crate::install::sandbox_policy(&settings, mode.sandbox()),
            &self.session,
            &tx,
        );
        let wiring = Arc::new(Wiring {
            settings: settings.clone(),
            provider: self.provider,
            shell,
            mode: CurrentMode::new(mode),
            reviewer,
            hooks,
            installs: INSTALLS,
        });
        let notices = &self.processes.notices;
        let host_names = crate::host_tools::names(self.user.host_tools.as_ref());
        let mut top = TopSeat {
            progress: self
                .user
                .watches_output
                .then(|| live_output(&tx, &settings)),
            approver: self.user.approver,
            questions: self.user.questions,
            editor: self.user.editor,
            host_tools: self.user.host_tools,
            output_schema: self.output_schema,
            notices: notices.clone(),
            mcp: Some(mcp),
            skills: Vec::new(),
            pruning: None,
        };
        let mut seat = Seat {
            session: &self.session,
            events: &tx,
            role: Role::Top(&mut top),
        };
        let draft = wiring.wire(&mut seat);
        // What the commands of a run that died outright (SIGKILL, a crash) created at
        // protected paths, set aside now.
        let journal = settings.home().value.join("pending-set-aside");
        for line in dsh_tools::settle_left_over(&journal) {
            let _ = notices.send(line);
        }
        // A tool whose facts name an argument its schema lacks (one renamed, say) would be
        // described wrongly by every front end: every debug build, the test suite's, stops.
        debug_assert_eq!(draft.tools.description_problems(), Vec::<String>::new());
        debug_assert_eq!(
            (crate::builtins::unlisted_tools(&draft.tools).into_iter())
                .filter(|name| !host_names.contains(name))
                .collect::<Vec<_>>(),
            Vec::<String>::new()
        );
        let catalog = draft.tools.catalog();
        let agent = draft.into_agent(&wiring, self.session, tx);
        Ok(Run {
            priced: settings.route().prices.value.is_some(),
            settings,
            agent,
            events,
            skills: top.skills,
            catalog,
            processes: self.processes,
            _pruning: top.pruning,
        })
    }
}

/// Where the tools' live output goes: the agent's events, redacted. bash's comes from its
/// redacting capture, which holds back a secret's start until the next read settles it; what
/// other tools report as they go is redacted chunk by chunk here.
fn live_output(
    events: &UnboundedSender<AgentEvent>,
    settings: &Settings,
) -> dsh_tools::ToolProgress {
    let tx = events.clone();
    let redactor = settings.redactor();
    Arc::new(move |call_id: &str, text: &str| {
        // Redacted whole first: a cut must not leave half a key where the redactor cannot
        // see it.
        let text = live_chunk(&dsh_tools::redacted(redactor.as_ref(), text.to_owned()));
        let _ = tx.send(AgentEvent::ToolOutput {
            call_id: call_id.to_owned(),
            text,
        });
    })
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
    let tools = crate::builtins::base_tools(settings).tools;
    let mut names: Vec<String> = tools.names().map(str::to_owned).collect();
    names.extend(
        crate::subagents::install::offered(settings.tool_filter())
            .into_iter()
            .chain(crate::goals::TOOL_NAMES)
            .filter(|name| settings.tool_filter().allows(name))
            .map(str::to_owned),
    );
    names.sort();
    names.extend(crate::mcp::offered(settings));
    names
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

/// The most one live-output event carries: the tools pass output on at most once a tick
/// (bash's command output, a workflow's `log()` lines), so this bounds what a command or a
/// script that writes without end can put in flight to a front end per tick.
const LIVE_CHUNK_BYTES: usize = 16 << 10;

/// `text` as one live-output event shows it: whole, or past [`LIVE_CHUNK_BYTES`] its last
/// part after a line that says how much was left out (the call's result has all of it).
fn live_chunk(text: &str) -> String {
    if text.len() <= LIVE_CHUNK_BYTES {
        return text.to_owned();
    }
    let mut cut = text.len() - LIVE_CHUNK_BYTES;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    format!(
        "[\u{2026} {cut} bytes not shown live; the result has them]\n{}",
        &text[cut..]
    )
}
