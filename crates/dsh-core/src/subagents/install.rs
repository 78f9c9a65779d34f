//! Subagents wired into an agent: the top agent's and every child's subagent tools, as far as
//! its tool list lets it have them, and what a child is told of being one.

use std::sync::{Arc, Mutex};

use dsh_protocol::Message;
use dsh_tools::{Tool, ToolRegistry};

use super::custom;
use super::kit::ChildKit;
use super::{BackgroundAgents, SubagentTool, background, parameters, ralph, workflow};
use crate::install::{Draft, Role, Seat, Wiring};

/// Told to every subagent, after the sandbox facts.
const DELEGATED: &str = "You are a subagent: another agent gave you this task, and your final \
     answer is what it receives, so make it complete and self-contained (conclusions, and the \
     paths of what you changed). Your permissions were fixed when you were started: a request \
     for a wider sandbox is refused, so if the task needs more, say so in your answer instead \
     of retrying.";

/// Gives the agent in `seat` its subagent tools and background children; the top agent makes
/// the run's kit (its ids after a resumed session's), a child is told it is one and bounded
/// by the kit's token budget.
pub(crate) fn install(wiring: &Arc<Wiring>, seat: &mut Seat<'_>, draft: &mut Draft) {
    let history = Arc::new(Mutex::new(Vec::new()));
    draft.config.completed_history = Some(history.clone());
    let background = BackgroundAgents::new();
    draft.config.background = Some(background.clone());
    let (kit, depth) = match &seat.role {
        Role::Top(_) => {
            let settings = &wiring.settings;
            let bounds = settings.workflows();
            let workflows = dsh_workflow::Limits {
                memory_bytes: usize::try_from(bounds.max_memory_mb.saturating_mul(1 << 20))
                    .unwrap_or(usize::MAX),
                time: bounds.time,
                max_agents: u32::try_from(bounds.max_agents).unwrap_or(u32::MAX),
                ..dsh_workflow::Limits::default()
            };
            let home = &settings.home().value;
            let agents = custom::load(&custom::folders(
                home,
                settings.cwd(),
                settings.files().trust().is_trusted(),
            ));
            if let Role::Top(top) = &seat.role {
                for problem in &agents.problems {
                    let _ = top.notices.send(problem.clone());
                }
            }
            let kit = ChildKit::new(*settings.subagents(), workflows, Arc::new(agents));
            // A resumed session's background children take messages again; new ids follow
            // theirs.
            background.recorded(seat.session.children());
            kit.number_after(seat.session.children());
            (kit, 0)
        }
        Role::Child {
            kit, depth, spec, ..
        } => {
            draft.config.token_budget = Some(kit.limits.max_tokens);
            draft.config.context.push(DELEGATED.to_owned());
            draft.config.delegated = true;
            if let Some(role) = &spec.role {
                draft.config.context.push(format!(
                    "You are the \"{}\" subagent. Your instructions:\n\n{}",
                    role.name, role.prompt
                ));
                if let Some(model) = &role.model {
                    draft.config.model.clone_from(model);
                }
            }
            (kit.clone(), *depth)
        }
    };
    register(
        &mut draft.tools,
        wiring,
        &kit,
        depth,
        seat,
        history,
        &background,
    );
}

/// The names of the subagent tools `filter` lets a run offer. The control tools come only
/// with a tool that can start a child: without one they would have nothing to act on.
/// `ralph` and `workflow` run their agents as subagents, and come with or without the other
/// tools.
pub(crate) fn offered(filter: &dsh_tools::ToolFilter) -> Vec<&'static str> {
    let orchestrators = ["ralph", "workflow"]
        .into_iter()
        .filter(|name| filter.allows(name));
    let starters: Vec<&'static str> = ["subagent", "subagent_fork"]
        .into_iter()
        .filter(|name| filter.allows(name))
        .collect();
    if starters.is_empty() {
        return orchestrators.collect();
    }
    let controls = background::control::CONTROL_TOOLS
        .into_iter()
        .filter(|name| filter.allows(name));
    starters
        .into_iter()
        .chain(controls)
        .chain(orchestrators)
        .collect()
}

/// Gives the agent at `depth` (0 for the top agent) the subagent tools its registry's lists
/// let it have ([`offered`]): `subagent`, `subagent_fork`, and the tools over its background
/// children.
fn register(
    tools: &mut ToolRegistry,
    wiring: &Arc<Wiring>,
    kit: &Arc<ChildKit>,
    depth: u32,
    seat: &Seat<'_>,
    history: Arc<Mutex<Vec<Message>>>,
    background: &Arc<BackgroundAgents>,
) {
    let tool = |fork: bool| SubagentTool {
        wiring: wiring.clone(),
        kit: kit.clone(),
        fork,
        depth,
        parent_session: seat.session.id().to_owned(),
        history: history.clone(),
        events: seat.events.clone(),
        background: background.clone(),
        parameters: parameters(fork, &kit.agents),
    };
    let reviver = Arc::new(tool(false));
    let mut made: Vec<Box<dyn Tool>> = vec![Box::new(tool(false)), Box::new(tool(true))];
    made.extend(background::control::control_tools(background, reviver));
    // Ralph's workers are the top agent's: a worker is told not to start a loop of its own,
    // and has no tool to.
    if depth == 0 {
        made.push(Box::new(ralph::RalphTool::new(Arc::new(tool(false)))));
        made.push(Box::new(workflow::WorkflowTool::new(Arc::new(tool(false)))));
    }
    let offered = offered(tools.filter());
    for tool in made {
        if offered.contains(&tool.name()) {
            tools.register(tool);
        }
    }
}
