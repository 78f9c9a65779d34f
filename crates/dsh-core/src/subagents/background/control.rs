//! The tools an agent controls its background children with: `list_agents`, `send_message`
//! and `interrupt_agent`. A child of the registry's module, so that the registry itself depends
//! on no tool (the agent loop reads it).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use dsh_tools::{
    Arguments, Param, ParamType, Parameters, Tool, ToolContext, ToolError, ToolFuture, ToolOutput,
};

use super::{BackgroundAgents, lock};
use crate::subagents::SubagentTool;

/// The names of the tools [`control_tools`] makes, in its order.
pub(crate) const CONTROL_TOOLS: [&str; 3] = ["list_agents", "send_message", "interrupt_agent"];

/// `list_agents`, `send_message` and `interrupt_agent` over one agent's background children.
pub(crate) fn control_tools(
    background: &Arc<BackgroundAgents>,
    reviver: Arc<SubagentTool>,
) -> [Box<dyn Tool>; 3] {
    [
        Box::new(ListAgents {
            background: background.clone(),
            parameters: Parameters::new(vec![
                Param::optional(
                    "scope",
                    ParamType::String,
                    "children (default): the subagents you started in the background; \
                     descendants: theirs too, indented under each.",
                )
                .one_of(&["children", "descendants"]),
            ]),
        }),
        Box::new(SendMessage {
            background: background.clone(),
            reviver,
            parameters: Parameters::new(vec![
                Param::required(
                    "subagent_id",
                    ParamType::String,
                    "The id the background subagent was started with.",
                ),
                Param::required("message", ParamType::String, "Its next task."),
            ]),
        }),
        Box::new(InterruptAgent {
            background: background.clone(),
            parameters: Parameters::new(vec![Param::required(
                "agent_id",
                ParamType::String,
                "The id of the background subagent to stop.",
            )]),
        }),
    ]
}

struct ListAgents {
    background: Arc<BackgroundAgents>,
    parameters: Parameters,
}

impl Tool for ListAgents {
    fn name(&self) -> &str {
        "list_agents"
    }

    fn facts(&self) -> dsh_tools::ToolFacts {
        dsh_tools::ToolFacts::new(dsh_tools::ToolKind::Other, "List the subagents").read_only()
    }

    fn description(&self) -> &str {
        "List the subagents you started in the background, with whether each is running or \
         idle (waiting for send_message). You are told when one finishes: do not poll."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn call<'a>(&'a self, args: Arguments, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let descendants = args.str("scope") == Some("descendants");
            let mut lines = Vec::new();
            self.background.describe(descendants, "", &mut lines);
            if lines.is_empty() {
                return Ok(ToolOutput::text("(no subagents)"));
            }
            Ok(ToolOutput::text(lines.join("\n")))
        })
    }
}

struct SendMessage {
    background: Arc<BackgroundAgents>,
    /// Starts a dormant child again.
    reviver: Arc<SubagentTool>,
    parameters: Parameters,
}

impl Tool for SendMessage {
    fn name(&self) -> &str {
        "send_message"
    }

    fn facts(&self) -> dsh_tools::ToolFacts {
        dsh_tools::ToolFacts::new(dsh_tools::ToolKind::Other, "Send a task to")
            .subject("subagent_id")
            .needs_no_review()
    }

    fn description(&self) -> &str {
        "Give a background subagent its next task, in the same conversation: it starts when its \
         current turn (if any) ends, and you are told when it finishes."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn plan_safe(&self, _args: &Arguments) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let id = args.str("subagent_id").unwrap_or_default();
            let message = args.str("message").unwrap_or_default();
            if message.trim().is_empty() {
                return Err(ToolError::plain("message must be a non-empty string"));
            }
            if let Some(run) = self.background.wake(id) {
                if let Err(error) = self.reviver.revive(&run, message.to_owned(), ctx).await {
                    self.background.recorded(std::slice::from_ref(&run));
                    return Err(error);
                }
            } else {
                let child = self.background.find(id).ok_or_else(|| unavailable(id))?;
                child.queued.fetch_add(1, Ordering::SeqCst);
                if child.inbox.send(message.to_owned()).is_err() {
                    child.queued.fetch_sub(1, Ordering::SeqCst);
                    return Err(unavailable(id));
                }
            }
            Ok(ToolOutput::text(format!(
                "message queued as the next turn for subagent {id}"
            )))
        })
    }
}

fn unavailable(id: &str) -> ToolError {
    ToolError::coded(
        "SubagentError",
        "NOT_AVAILABLE",
        format!("subagent \"{id}\" is unavailable"),
    )
}

struct InterruptAgent {
    background: Arc<BackgroundAgents>,
    parameters: Parameters,
}

impl Tool for InterruptAgent {
    fn name(&self) -> &str {
        "interrupt_agent"
    }

    fn facts(&self) -> dsh_tools::ToolFacts {
        dsh_tools::ToolFacts::new(dsh_tools::ToolKind::Other, "Interrupt")
            .subject("agent_id")
            .needs_no_review()
    }

    fn description(&self) -> &str {
        "Stop a background subagent's current turn; it stays available for send_message. \
         Stopping one that is idle changes nothing."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn plan_safe(&self, _args: &Arguments) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let id = args.str("agent_id").unwrap_or_default();
            match self.background.find(id) {
                Some(child) => {
                    // The stop is looked at under the lock `began` sets it under, so an
                    // interrupt is never lost between a queued turn and its start.
                    let current = lock(&child.current);
                    match current.as_ref() {
                        Some(stop) => stop.request(dsh_protocol::AbortReason::Parent),
                        None if child.queued.load(Ordering::SeqCst) > 0 => {
                            child.interrupt_next.store(true, Ordering::SeqCst);
                        }
                        None => {}
                    }
                }
                // A resumed session's idle child: nothing runs to stop.
                None if lock(&self.background.dormant)
                    .iter()
                    .any(|run| run.agent_id == id) => {}
                None => return Err(unavailable(id)),
            }
            Ok(ToolOutput::text(format!(
                "interrupt requested for agent {id}"
            )))
        })
    }
}
