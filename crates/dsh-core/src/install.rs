//! How an agent of a run is put together. The run's features (the built-in tools and skills,
//! MCP, Auto review, subagents, goals, workspace instructions, hooks, checkpoints) each wire
//! themselves in with an install function beside their own code; the composition root
//! (`builder.rs`) lists them in order in [`Wiring::installs`], and the top agent and every
//! subagent are wired by the same list ([`Wiring::wire`]), each feature looking at the
//! [`Seat`] it wires to see whether the agent is the run's own or a child, and how.
//!
//! Nothing here names a feature: the features name this module, and the list is data, so
//! no feature and the code that builds its agents depend on each other.

use std::sync::Arc;

use dsh_config::Settings;
use dsh_llm::Provider;
use dsh_sandbox::escalation::{ApprovalPolicy, Approver};
use dsh_sandbox::{SandboxMode, SandboxPolicy};
use dsh_tools::{
    AttachmentStore, EditorFiles, ModelCaps, Shell, SpillStore, ToolProgress, ToolRegistry,
    ToolSession, UserQuestions,
};
use tokio::sync::mpsc::UnboundedSender;

use crate::agent::{AgentConfig, AgentParts};
use crate::auto_review::AutoReviewer;
use crate::checkpoints::{Checkpointer, Pruning};
use crate::plan_approval::CurrentMode;
use crate::subagents::kit::{ChildKit, ChildSpec};
use crate::{Agent, AgentEvent, HookRunner, Session};

/// One feature's install: what it adds to the agent `draft` in `seat`.
pub(crate) type Install = fn(&Arc<Wiring>, &mut Seat<'_>, &mut Draft);

/// What every agent of a run is wired from: made once as the run is assembled, and kept by
/// the subagent tools, so that a child is wired by the same installs as the top agent.
pub(crate) struct Wiring {
    pub(crate) settings: Arc<Settings>,
    pub(crate) provider: Arc<dyn Provider>,
    /// The top agent's shell; a child's is made from it.
    pub(crate) shell: Arc<Shell>,
    /// The mode the run's agents work under now: a plan approved since the run began may
    /// have changed it.
    pub(crate) mode: CurrentMode,
    /// The run's Auto reviewer, when it has one.
    pub(crate) reviewer: Option<Arc<AutoReviewer>>,
    /// The top agent's hooks, when the user has any: a child's calls run them too.
    pub(crate) hooks: Option<Arc<HookRunner>>,
    /// Each feature's install, in the order they wire an agent: their tools are offered in
    /// this order, and the facts they tell the model follow the sandbox's in this order.
    pub(crate) installs: &'static [Install],
}

/// The agent being wired: its session, where its events go, and whose it is.
pub(crate) struct Seat<'a> {
    pub(crate) session: &'a Session,
    pub(crate) events: &'a UnboundedSender<AgentEvent>,
    pub(crate) role: Role<'a>,
}

/// Whose agent is being wired.
pub(crate) enum Role<'a> {
    /// The run's own agent, with what only it has.
    Top(&'a mut TopSeat),
    /// A subagent, `depth` levels below the top agent, built from the run's `kit`; `resumed`
    /// when its session is a background child's taken up again.
    Child {
        spec: ChildSpec,
        depth: u32,
        kit: Arc<ChildKit>,
        resumed: bool,
    },
}

/// What only the top agent is wired with, and what its installs hand back to the run.
pub(crate) struct TopSeat {
    /// Who approves escalations and answers questions; none in a headless run.
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) questions: Option<Arc<dyn UserQuestions>>,
    /// The editor whose files the file tools go through.
    pub(crate) editor: Option<Arc<dyn EditorFiles>>,
    /// The tools the client runs, offered to the top agent only.
    pub(crate) host_tools: Option<crate::host_tools::HostTools>,
    /// Where the tools' live output goes, when a front end shows it.
    pub(crate) progress: Option<ToolProgress>,
    /// What the final answer must be (`--output-schema`).
    pub(crate) output_schema: Option<Arc<crate::OutputSchema>>,
    /// The user's notices (already redacting).
    pub(crate) notices: UnboundedSender<String>,
    /// The MCP servers' tools, once they are ready: MCP's install takes them.
    pub(crate) mcp: Option<dsh_mcp::McpReady>,
    /// Every skill found (name, description), for a front end to list.
    pub(crate) skills: Vec<(String, String)>,
    /// The day's prune of the checkpoint store, if the run started it.
    pub(crate) pruning: Option<Pruning>,
}

/// An agent before it is made: what the installs fill in.
pub(crate) struct Draft {
    pub(crate) config: AgentConfig,
    pub(crate) tools: ToolRegistry,
    pub(crate) tool_session: ToolSession,
    /// The skill catalog, the last of the facts the model is told.
    pub(crate) skill_catalog: Option<String>,
    pub(crate) checkpointer: Option<Checkpointer>,
}

impl Wiring {
    /// The agent in `seat`, wired by every install in turn.
    pub(crate) fn wire(self: &Arc<Self>, seat: &mut Seat<'_>) -> Draft {
        let mut draft = Draft::new(self, seat);
        for install in self.installs {
            install(self, seat, &mut draft);
        }
        draft
    }
}

impl Draft {
    /// What every agent starts from: how it drives the model, the sandbox it works in (told
    /// to the model first), and its tools' session; the top agent's also has the run's caps
    /// and its user.
    fn new(wiring: &Wiring, seat: &mut Seat<'_>) -> Self {
        let settings = &wiring.settings;
        // The mode now: a plan approved since the run began may have changed it.
        let current = wiring.mode.get();
        let (sandbox, approval, shell) = match &seat.role {
            Role::Top(_) => (
                current.sandbox(),
                settings.approval().value,
                wiring.shell.clone(),
            ),
            // A child never asks.
            Role::Child { spec, .. } => (
                if spec.read_only {
                    SandboxMode::ReadOnly
                } else {
                    current.sandbox()
                },
                ApprovalPolicy::Never,
                Arc::new(wiring.shell.for_child()),
            ),
        };
        let policy = sandbox_policy(settings, sandbox);
        let mut config = agent_config(settings);
        config.context.push(dsh_sandbox::runtime_context(
            &policy,
            settings.sandbox(),
            approval,
        ));
        let mut tool_session = tool_session(
            settings,
            policy,
            approval,
            current.is_plan(),
            shell,
            SpillStore::new(seat.session.dir().join("spill")),
        );
        if let Role::Top(top) = &mut seat.role {
            config.mode = Some(wiring.mode.clone());
            // The run's caps are the top agent's: a child's requests are its parent's calls,
            // and what children bill is in the parent's steps, so the budget covers them.
            config.max_requests = settings.max_turns().value;
            config.output_schema = top.output_schema.clone();
            // Settings refuse a budget without prices, so every request comes back priced.
            config.budget = (settings.max_budget_usd().value).map(crate::config::Usd::value);
            config.titles = settings.titles().value;
            tool_session = tool_session
                .with_user(top.approver.take(), top.questions.take())
                .with_progress(top.progress.take())
                .with_editor(top.editor.take());
        }
        Draft {
            config,
            tools: ToolRegistry::new(),
            tool_session,
            skill_catalog: None,
            checkpointer: None,
        }
    }

    /// The agent wired, over `session`, reporting to `events`.
    pub(crate) fn into_agent(
        self,
        wiring: &Wiring,
        session: Session,
        events: UnboundedSender<AgentEvent>,
    ) -> Agent {
        let Draft {
            mut config,
            tools,
            tool_session,
            skill_catalog,
            checkpointer,
        } = self;
        config.context.extend(skill_catalog);
        let mut agent = Agent::new(AgentParts {
            provider: wiring.provider.clone(),
            tools,
            tool_session: Arc::new(tool_session),
            config,
            session,
            events,
        });
        agent.set_checkpointer(checkpointer);
        agent
    }
}

/// Where the run's commands may write and reach, under `mode`.
pub(crate) fn sandbox_policy(settings: &Settings, mode: SandboxMode) -> SandboxPolicy {
    SandboxPolicy::new(mode, settings.cwd(), settings.add_dirs().value.clone())
        .with_dsh_home(&settings.home().value)
}

/// How an agent drives the model, by the settings.
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
    config.compaction = settings.compaction();
    config.job_wait = settings.job_wait().value;
    config.rules = Some(settings.rules().clone()).filter(|rules| !rules.is_empty());
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
