//! Subagents: `subagent` starts a child agent with a fresh history and a task, `subagent_fork` one
//! that begins with the parent's completed turns. A child runs in this process, next to the
//! parent's other calls, with its own session log (its header names the parent; the parent's
//! log records a `subagent/run` naming the child's session). The call waits for the child and
//! returns its final answer; what the child billed is in the parent's step usage, and its
//! events reach whoever watches the parent, tagged with its id.
//!
//! Bounded: how deep children nest, how many run at once, how many a run starts, and how many
//! tokens one may bill ([`SubagentLimits`]); hitting a bound is a tool error naming its key.
//! A child never asks the user anything (its approval policy is `never`, and it is not offered
//! `ask_user_question`), and it stops when its parent stops.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use dsh_protocol::{FailureCode, Message, Record, SubagentRunRecord, TurnEndReason, Usage};
use dsh_tools::{
    Arguments, Param, ParamType, Parameters, Tool, ToolContext, ToolEffect, ToolError, ToolFilter,
    ToolFuture, ToolOutput, ToolRegistry, ToolSession,
};
use tokio::sync::mpsc::{self, UnboundedSender};

use crate::config::SubagentLimits;
use crate::{Agent, AgentConfig, AgentEvent, Session, Stop};

/// What every agent of a run builds its children from.
pub(crate) struct ChildKit {
    pub(crate) limits: SubagentLimits,
    /// A child's agent before its tools and session: model, prompt facts, instructions.
    pub(crate) build: Box<dyn Fn(ChildSpec) -> ChildParts + Send + Sync>,
    /// Subagents started in this run, and running now.
    started: AtomicU32,
    running: AtomicU32,
}

/// What one child is to be.
pub(crate) struct ChildSpec {
    /// Only these tools (besides the run's own lists); `None`: the parent's.
    pub allow: Option<Vec<String>>,
    /// Under a read-only sandbox, whatever the parent's mode.
    pub read_only: bool,
    /// Whether it begins from the parent's history (the workspace instructions are in it).
    pub fork: bool,
}

/// A child's parts, as the run's builder makes them.
pub(crate) struct ChildParts {
    pub provider: Arc<dyn dsh_llm::Provider>,
    pub tools: ToolRegistry,
    pub tool_session: ToolSession,
    pub config: AgentConfig,
    pub session_home: std::path::PathBuf,
    pub cwd: std::path::PathBuf,
    pub log_options: crate::LogOptions,
}

impl ChildKit {
    pub(crate) fn new(
        limits: SubagentLimits,
        build: Box<dyn Fn(ChildSpec) -> ChildParts + Send + Sync>,
    ) -> Arc<ChildKit> {
        Arc::new(ChildKit {
            limits,
            build,
            started: AtomicU32::new(0),
            running: AtomicU32::new(0),
        })
    }
}

/// The subagent tools of one agent at `depth` (0 for the top agent).
pub(crate) fn tools(
    kit: &Arc<ChildKit>,
    depth: u32,
    parent_session: &str,
    history: Arc<Mutex<Vec<Message>>>,
    events: UnboundedSender<AgentEvent>,
) -> [Box<dyn Tool>; 2] {
    let tool = |fork: bool| -> Box<dyn Tool> {
        Box::new(SubagentTool {
            kit: kit.clone(),
            fork,
            depth,
            parent_session: parent_session.to_owned(),
            history: history.clone(),
            events: events.clone(),
            parameters: parameters(fork),
        })
    };
    [tool(false), tool(true)]
}

fn parameters(fork: bool) -> Parameters {
    Parameters::new(vec![
        Param::required(
            "description",
            ParamType::String,
            "A short (3-5 word) description of the task, for display.",
        ),
        Param::required(
            "prompt",
            ParamType::String,
            if fork {
                "The task. The subagent already has this conversation's completed turns, so \
                 state only what is new."
            } else {
                "The whole task, self-contained: the subagent does not see this conversation."
            },
        ),
        Param::optional(
            "run_in_background",
            ParamType::Boolean,
            "Must be false or absent: this call waits for the subagent and returns its answer.",
        ),
        Param::optional(
            "tools",
            ParamType::Array(Box::new(ParamType::String)),
            "Only these tools for the subagent (names as yours); default: the tools you have.",
        ),
        Param::optional(
            "read_only",
            ParamType::Boolean,
            "Run the subagent under a read-only sandbox, whatever your own mode (default false).",
        ),
    ])
}

/// The `subagent` and `subagent_fork` tools.
struct SubagentTool {
    kit: Arc<ChildKit>,
    fork: bool,
    /// The calling agent's depth.
    depth: u32,
    parent_session: String,
    /// The caller's completed turns, for a fork.
    history: Arc<Mutex<Vec<Message>>>,
    /// Where the caller's own events go; the child's follow, tagged.
    events: UnboundedSender<AgentEvent>,
    parameters: Parameters,
}

impl Tool for SubagentTool {
    fn name(&self) -> &str {
        if self.fork {
            "subagent_fork"
        } else {
            "subagent"
        }
    }

    fn description(&self) -> &str {
        if self.fork {
            "Hand a task that builds on this conversation to a subagent that starts from its \
             completed turns; you get its final answer, not its steps, and keep your own \
             context for your work. The call waits for the answer."
        } else {
            "Hand a self-contained task (research, a scoped change, an analysis) to a subagent \
             that works in its own context; you get its final answer, not its steps. Give it \
             everything it needs: it does not see this conversation. The call waits for the \
             answer; several calls in one answer run at once."
        }
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    /// A stop reaches the child through its token: the call waits for it to end its turn.
    fn stops_itself(&self) -> bool {
        true
    }

    /// A child inherits plan mode, so what it may do is checked there.
    fn plan_safe(&self, _args: &Arguments) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(self.run(args, ctx))
    }
}

impl SubagentTool {
    async fn run(&self, args: Arguments, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if args.bool("run_in_background") == Some(true) {
            return Err(ToolError::plain(
                "run_in_background is not available for this tool: the call waits for the \
                 subagent and returns its answer; call it without run_in_background",
            ));
        }
        let label = args
            .str("description")
            .unwrap_or_default()
            .trim()
            .to_owned();
        let prompt = args.str("prompt").unwrap_or_default().to_owned();
        if prompt.trim().is_empty() {
            return Err(ToolError::plain("prompt must be a non-empty string"));
        }
        let allow = args.get("tools").and_then(|v| v.as_array()).map(|names| {
            names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect::<Vec<_>>()
        });
        if let Some(names) = &allow {
            let unknown = ToolFilter {
                allow: Some(names.clone()),
                deny: Vec::new(),
            };
            if let Some(name) = unknown.unknown_name() {
                return Err(ToolError::plain(format!(
                    "tools names \"{name}\", which is no tool dsh has"
                )));
            }
        }
        let read_only = args.bool("read_only").unwrap_or(false);
        let _slot = self.admit()?;
        let n = self.kit.started.load(Ordering::SeqCst);
        let agent_id = format!("subagent-{n}");
        let depth = self.depth + 1;
        let seed = self.fork.then(|| {
            self.history
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        });
        let (tx, mut rx) = mpsc::unbounded_channel();
        let parts = (self.kit.build)(ChildSpec {
            allow,
            read_only,
            fork: self.fork,
        });
        let mut session = Session::create_child(
            &parts.session_home,
            parts.cwd.clone(),
            parts.log_options,
            &self.parent_session,
            depth,
        );
        let child_session = session.id().to_owned();
        let fail = |e: crate::CoreError| {
            ToolError::plain(format!("subagent run failed: its session log: {e}"))
        };
        if let Some(messages) = seed.filter(|m| !m.is_empty()) {
            session
                .commit(Record::SessionSeed { messages })
                .map_err(fail)?;
        }
        let ChildParts {
            provider,
            mut tools,
            mut tool_session,
            mut config,
            ..
        } = parts;
        tool_session.spill = dsh_tools::SpillStore::new(session.dir().join("spill"));
        let child_history = Arc::new(Mutex::new(Vec::new()));
        config.completed_history = Some(child_history.clone());
        config.token_budget = Some(self.kit.limits.max_tokens);
        // Its own subagent tools, when its tool list lets it have them.
        for tool in self::tools(&self.kit, depth, &child_session, child_history, tx.clone()) {
            tools.register(tool);
        }
        let mut agent = Agent::new(provider, tools, Arc::new(tool_session), config, session, tx);
        // The child's events reach the caller's watchers, tagged with its id.
        let forward = {
            let events = self.events.clone();
            let agent_id = agent_id.clone();
            tokio::spawn(async move {
                while let Some(event) = rx.recv().await {
                    let _ = events.send(AgentEvent::Child {
                        agent_id: agent_id.clone(),
                        event: Box::new(event),
                    });
                }
            })
        };
        // On a task of its own: the child's calls (its own subagents too) are not part of the
        // caller's future, and a stop of the caller stops it through its token.
        let stop = Stop::child_of(&ctx.cancel);
        let run = tokio::spawn(async move {
            let summary = agent.run_turn(prompt, &stop).await;
            drop(agent);
            summary
        });
        let summary = run.await;
        let _ = forward.await;
        let summary = summary
            .map_err(|e| ToolError::plain(format!("subagent run failed: {e}")))?
            .map_err(fail)?;
        let record = SubagentRunRecord {
            turn: 0,
            agent_id,
            session_id: child_session,
            label,
            fork: self.fork,
            reason: summary.reason.clone(),
            usage: summary.usage,
        };
        match &summary.reason {
            TurnEndReason::Completed => Ok(ToolOutput::text(summary.text)
                .with_usage(summary.usage)
                .with_effect(ToolEffect::Subagent(record))),
            reason => Err(failure_text(reason, &summary.text, summary.usage)
                .with_effect(ToolEffect::Subagent(record))),
        }
    }

    /// Takes a place under the limits, or says which one is reached and its key.
    fn admit(&self) -> Result<RunningSlot, ToolError> {
        let limits = &self.kit.limits;
        let depth = self.depth + 1;
        if depth > limits.max_depth {
            return Err(ToolError::coded(
                "SubagentError",
                "SUBAGENT_LIMIT",
                format!(
                    "subagent depth {depth} exceeds maxDepth {} (subagents.max_depth): finish \
                     this task yourself",
                    limits.max_depth
                ),
            ));
        }
        let running = self.kit.running.fetch_add(1, Ordering::SeqCst);
        let slot = RunningSlot(self.kit.clone());
        if running >= limits.max_concurrent {
            return Err(ToolError::coded(
                "SubagentError",
                "SUBAGENT_LIMIT",
                format!(
                    "subagent limit reached: {running} subagents are running, the most at once \
                     (subagents.max_concurrent = {}); wait for one to finish, or do it yourself",
                    limits.max_concurrent
                ),
            ));
        }
        let started = self.kit.started.fetch_add(1, Ordering::SeqCst);
        if started >= limits.max_total {
            self.kit.started.fetch_sub(1, Ordering::SeqCst);
            return Err(ToolError::coded(
                "SubagentError",
                "SUBAGENT_LIMIT",
                format!(
                    "subagent limit reached: this run has started {started} subagents, the most \
                     it may (subagents.max_total = {}); do the rest yourself",
                    limits.max_total
                ),
            ));
        }
        Ok(slot)
    }
}

/// A place among the running subagents, given back when the run ends however it ends.
struct RunningSlot(Arc<ChildKit>);

impl Drop for RunningSlot {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The reference's texts for a child that did not complete, with what it said before.
fn failure_text(reason: &TurnEndReason, partial: &str, usage: Usage) -> ToolError {
    let (headline, diagnostic) = match reason {
        TurnEndReason::Aborted { .. } => ("subagent run was cancelled", None),
        TurnEndReason::MaxTokens => ("subagent run hit its token limit before finishing", None),
        TurnEndReason::Error { error } if error.code == FailureCode::TokenBudget => (
            "subagent run hit its token limit before finishing",
            Some(error.message.clone()),
        ),
        TurnEndReason::Error { error } => ("subagent run failed", Some(error.message.clone())),
        TurnEndReason::Interrupted => ("subagent run failed", None),
        TurnEndReason::PlanSubmitted | TurnEndReason::Completed => {
            ("subagent run ended abnormally (plan-submitted)", None)
        }
    };
    let mut text = headline.to_owned();
    if let Some(diagnostic) = diagnostic {
        text.push_str(&format!("\nDiagnostic: {diagnostic}"));
    }
    if !partial.is_empty() {
        text.push_str(&format!(
            "\nPartial output before the run ended:\n{partial}"
        ));
    }
    ToolError::plain(text).with_usage(usage)
}
