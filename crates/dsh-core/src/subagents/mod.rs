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

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use dsh_protocol::{FailureCode, Message, Record, SubagentRunRecord, TurnEndReason, Usage};
use dsh_tools::{
    Arguments, Param, ParamType, Parameters, Tool, ToolContext, ToolEffect, ToolError, ToolFilter,
    ToolFuture, ToolOutput,
};
use tokio::sync::mpsc::{self, UnboundedSender};

use self::ended::{EndedChild, failure_text};
use self::kit::{ChildKit, ChildSpec};
use crate::install::{Role, Seat, Wiring};
use crate::{Agent, AgentEvent, LogOptions, Session, Stop};

pub(crate) mod background;
pub(crate) mod custom;
mod ended;
pub(crate) mod install;
pub(crate) mod kit;
mod ralph;
mod workflow;

pub(crate) use background::BackgroundAgents;

pub(super) fn parameters(fork: bool, agents: &custom::CustomAgents) -> Parameters {
    let mut params = vec![
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
            "Return the subagent's id at once and let it work on (default false: wait for its \
             answer). You are told when it finishes; send_message gives it more.",
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
    ];
    // A fork goes on with this conversation; a custom subagent starts from its own
    // instructions.
    if !fork && let Some(agent) = custom::parameter(agents) {
        params.push(agent);
    }
    Parameters::new(params)
}

/// The `subagent` and `subagent_fork` tools.
pub(crate) struct SubagentTool {
    /// What the run's agents are wired from: a child is wired as the top agent is.
    pub(super) wiring: Arc<Wiring>,
    pub(super) kit: Arc<ChildKit>,
    pub(super) fork: bool,
    /// The calling agent's depth.
    pub(super) depth: u32,
    pub(super) parent_session: String,
    /// The caller's completed turns, for a fork.
    pub(super) history: Arc<Mutex<Vec<Message>>>,
    /// Where the caller's own events go; the child's follow, tagged.
    pub(super) events: UnboundedSender<AgentEvent>,
    /// The caller's background children.
    pub(super) background: Arc<BackgroundAgents>,
    pub(super) parameters: Parameters,
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
             context for your work. The call waits for the answer, or, with \
             run_in_background, returns the subagent's id at once."
        } else {
            "Hand a self-contained task (research, a scoped change, an analysis) to a subagent \
             that works in its own context; you get its final answer, not its steps. Give it \
             everything it needs: it does not see this conversation. The call waits for the \
             answer (several calls in one answer run at once), or, with run_in_background, \
             returns the subagent's id at once and you are told when it finishes."
        }
    }

    fn facts(&self) -> dsh_tools::ToolFacts {
        let verb = if self.fork {
            "Forked subagent"
        } else {
            "Subagent"
        };
        dsh_tools::ToolFacts::new(dsh_tools::ToolKind::Other, verb)
            .subject("description")
            .hook_names(&["Task"])
            .summary(subagent_summary)
            .needs_no_review()
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
        let in_background = args.bool("run_in_background") == Some(true);
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
            if let Some(name) = unknown.unknown_name(dsh_config::BUILTIN_TOOLS) {
                return Err(ToolError::plain(format!(
                    "tools names \"{name}\", which is no tool dsh has"
                )));
            }
        }
        let role = self.role(&args)?;
        let allow = custom::narrowed(allow, role.as_deref());
        let read_only =
            args.bool("read_only").unwrap_or(false) || role.as_ref().is_some_and(|r| r.read_only);
        let (slot, n) = self.admit(true)?;
        let kind = role.as_ref().map_or("general", |r| r.name.as_str());
        let prompt = self.start_hooks(n, kind, &label, prompt, ctx).await;
        let spec = ChildSpec {
            allow,
            read_only,
            fork: self.fork,
            role,
        };
        let child = self.start_child(spec, n, label, in_background, None)?;
        if in_background {
            let agent_id = child.record.agent_id.clone();
            self.start_in_background(child.agent, child.record, prompt, ctx, slot, child.forward);
            return Ok(ToolOutput::text(format!("started subagent {agent_id}")));
        }
        let ended = self.finish_foreground(child, prompt, ctx).await?;
        drop(slot);
        let (summary, record) = (ended.summary, ended.record);
        match &summary.reason {
            TurnEndReason::Completed => Ok(ToolOutput::text(summary.text)
                .with_usage(summary.usage)
                .with_effect(ToolEffect::Subagents(vec![record]))),
            reason => Err(failure_text(reason, &summary.text, summary.usage)
                .with_effect(ToolEffect::Subagents(vec![record]))),
        }
    }

    /// The SubagentStart hooks of child `n`: what they print is added to its task.
    async fn start_hooks(
        &self,
        n: u32,
        kind: &str,
        label: &str,
        prompt: String,
        ctx: &ToolContext,
    ) -> String {
        let Some(hooks) = &self.wiring.hooks else {
            return prompt;
        };
        let fields = serde_json::json!({
            "agent_id": format!("subagent-{n}"),
            "agent_type": kind,
            "description": label,
        });
        let verdict =
            (hooks.fire(crate::HookEvent::SubagentStart, None, fields, &ctx.cancel)).await;
        if verdict.context.is_empty() {
            return prompt;
        }
        format!("{prompt}\n\n{}", verdict.context.join("\n\n"))
    }

    /// The custom subagent a call names (`agent`), if it names one the run has.
    fn role(&self, args: &Arguments) -> Result<Option<Arc<custom::CustomAgent>>, ToolError> {
        let Some(name) = args.str("agent").map(str::trim).filter(|n| !n.is_empty()) else {
            return Ok(None);
        };
        match self.kit.agents.get(name) {
            Some(agent) => Ok(Some(Arc::new(agent.clone()))),
            None => Err(ToolError::plain(format!(
                "agent \"{name}\" is no custom subagent of this run: {}",
                custom::names(&self.kit.agents)
            ))),
        }
    }

    /// A new child numbered `n`, ready to run: its agent (its answer held to `schema` when
    /// there is one), its session (seeded with the caller's history for a fork), the record
    /// of its run for the caller's log, and what forwards its events to the caller's.
    pub(crate) fn start_child(
        &self,
        spec: ChildSpec,
        n: u32,
        label: String,
        in_background: bool,
        schema: Option<Arc<crate::OutputSchema>>,
    ) -> Result<StartedChild, ToolError> {
        let agent_id = format!("subagent-{n}");
        let depth = self.depth + 1;
        let seed = spec.fork.then(|| {
            self.history
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        });
        let (allow, read_only, fork) = (spec.allow.clone(), spec.read_only, spec.fork);
        let (tx, rx) = mpsc::unbounded_channel();
        let settings = &self.wiring.settings;
        let mut session = Session::create_child(
            &settings.home().value,
            settings.cwd().clone(),
            LogOptions::of(settings),
            &self.parent_session,
            depth,
        );
        session.redact_failures(settings.redactor());
        // How the child's runs are recorded in the caller's log; the end of each run fills in
        // how it ended and what it billed.
        let record = SubagentRunRecord {
            turn: 0,
            agent_id: agent_id.clone(),
            session_id: session.id().to_owned(),
            label,
            fork,
            tools: allow,
            read_only,
            background: in_background,
            ids_used: 0,
            reason: TurnEndReason::Completed,
            usage: Usage::default(),
        };
        if let Some(messages) = seed.filter(|m| !m.is_empty()) {
            session
                .commit(Record::SessionSeed { messages })
                .map_err(log_failure)?;
        }
        let agent = self.child_agent(spec, session, depth, tx, false, schema);
        let forward = forward(rx, self.events.clone(), agent_id);
        Ok(StartedChild {
            agent,
            record,
            forward,
        })
    }

    /// Runs a started child's `prompt` to its end while the call waits, on a task of its own:
    /// the child's calls (its own subagents too) are not part of the caller's future, and a
    /// stop of the caller stops it through its token.
    pub(crate) async fn finish_foreground(
        &self,
        child: StartedChild,
        prompt: String,
        ctx: &ToolContext,
    ) -> Result<EndedChild, ToolError> {
        let StartedChild {
            mut agent,
            mut record,
            forward,
        } = child;
        let stop = Stop::child_of(&ctx.cancel);
        // `run`, not one turn: like a headless run, the child waits for its own background work
        // (jobs, children) before it answers, and what it leaves running is stopped and counted.
        let run = tokio::spawn(async move {
            let summary = agent.run(prompt, &stop).await;
            let structured = agent.structured_output().cloned();
            agent.stop_jobs().await;
            drop(agent);
            summary.map(|summary| (summary, structured))
        });
        let ended = run.await;
        let _ = forward.await;
        let (summary, structured) = ended
            .map_err(|e| ToolError::plain(format!("subagent run failed: {e}")))?
            .map_err(log_failure)?;
        record.ids_used = self.kit.ids_used();
        record.reason = summary.reason.clone();
        record.usage = summary.usage;
        Ok(EndedChild {
            summary,
            record,
            structured,
        })
    }

    /// A child's agent over `session`, wired by the run's installs as the top agent is, its
    /// answer held to `schema` when there is one.
    fn child_agent(
        &self,
        spec: ChildSpec,
        session: Session,
        depth: u32,
        tx: UnboundedSender<AgentEvent>,
        resumed: bool,
        schema: Option<Arc<crate::OutputSchema>>,
    ) -> Agent {
        let mut seat = Seat {
            session: &session,
            events: &tx,
            role: Role::Child {
                spec,
                depth,
                kit: self.kit.clone(),
                resumed,
            },
        };
        let mut draft = self.wiring.wire(&mut seat);
        draft.config.output_schema = schema;
        draft.into_agent(&self.wiring, session, tx)
    }

    /// Gives `message` to a background child the resumed session recorded: its log is resumed
    /// and it runs the message as its next turn, in the background as before.
    async fn revive(
        &self,
        run: &SubagentRunRecord,
        message: String,
        ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        let slot = self.take_running_slot()?;
        let settings = &self.wiring.settings;
        let mut session = Session::resume(
            &settings.home().value,
            settings.cwd().clone(),
            &run.session_id,
            LogOptions::of(settings),
        )
        .map_err(|e| {
            ToolError::coded(
                "SubagentError",
                "NOT_AVAILABLE",
                format!(
                    "subagent \"{}\" is unavailable: its session {} cannot be resumed: {e}",
                    run.agent_id, run.session_id
                ),
            )
        })?;
        session.redact_failures(settings.redactor());
        let spec = ChildSpec {
            allow: run.tools.clone(),
            read_only: run.read_only,
            fork: run.fork,
            role: None,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        // Its history has the workspace instructions it was given: only what changed since.
        let mut agent = self.child_agent(spec, session, self.depth + 1, tx, true, None);
        agent.count_logged_usage();
        let forward = forward(rx, self.events.clone(), run.agent_id.clone());
        self.start_in_background(agent, run.clone(), message, ctx, slot, forward);
        Ok(())
    }

    /// Runs the child's turns as its inbox gives them, on a task of its own, telling the
    /// caller's background registry when each ends. The child keeps its place among the
    /// running ones until the run lets it go.
    fn start_in_background(
        &self,
        mut agent: Agent,
        record: SubagentRunRecord,
        prompt: String,
        ctx: &ToolContext,
        slot: RunningSlot,
        forward: tokio::task::JoinHandle<()>,
    ) {
        let (inbox, mut turns) = mpsc::unbounded_channel::<String>();
        let _ = inbox.send(prompt);
        let child = self.background.add(
            record.agent_id.clone(),
            record.label.clone(),
            inbox,
            agent.background().unwrap_or_default(),
        );
        let background = Arc::downgrade(&self.background);
        let child = Arc::downgrade(&child);
        let run_token = ctx.cancel.clone();
        let kit = self.kit.clone();
        tokio::spawn(async move {
            let _slot = slot;
            while let Some(prompt) = turns.recv().await {
                let (Some(registry), Some(handle)) = (background.upgrade(), child.upgrade()) else {
                    break;
                };
                let stop = Stop::child_of(&run_token);
                if !registry.began(&handle, stop.clone()) {
                    break;
                }
                let (text, reason, usage) = match agent.run(prompt, &stop).await {
                    Ok(summary) => (summary.text, summary.reason, summary.usage),
                    Err(error) => (
                        String::new(),
                        TurnEndReason::Error {
                            error: dsh_protocol::Failure::new(
                                FailureCode::Unknown,
                                format!("its session log: {error}"),
                            ),
                        },
                        Usage::default(),
                    ),
                };
                let mut ended = record.clone();
                ended.reason = reason;
                ended.usage = usage;
                ended.ids_used = kit.ids_used();
                registry.ended(&handle, &text, ended);
                if run_token.is_cancelled() {
                    break;
                }
            }
            agent.stop_jobs().await;
            drop(agent);
            let _ = forward.await;
        });
    }

    /// Takes a place under the limits for a new child, with its id's number, or says which
    /// limit is reached and its key.
    /// Ralph's rounds and workflows' agents (`counted` false) are not counted against
    /// `subagents.max_total`: they are bounded by their own limits.
    pub(crate) fn admit(&self, counted: bool) -> Result<(RunningSlot, u32), ToolError> {
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
        let slot = self.take_running_slot()?;
        if counted {
            let started = self.kit.started.fetch_add(1, Ordering::SeqCst);
            if started >= limits.max_total {
                self.kit.started.fetch_sub(1, Ordering::SeqCst);
                return Err(ToolError::coded(
                    "SubagentError",
                    "SUBAGENT_LIMIT",
                    format!(
                        "subagent limit reached: this run has started {started} subagents, the \
                         most it may (subagents.max_total = {}); do the rest yourself",
                        limits.max_total
                    ),
                ));
            }
        }
        let number = self.kit.numbered_before.load(Ordering::SeqCst)
            + self.kit.numbered.fetch_add(1, Ordering::SeqCst)
            + 1;
        Ok((slot, number))
    }

    /// A place for a child that is not counted against `max_total` (a Ralph round, a
    /// workflow's agent), waiting for one while the run's running children fill them all.
    async fn admit_waiting(&self) -> Result<(RunningSlot, u32), ToolError> {
        loop {
            // Made before the check, so a place freed in between still wakes it.
            let freed = self.kit.freed.notified();
            match self.admit(false) {
                Err(error)
                    if self.kit.running.load(Ordering::SeqCst) > 0 && is_running_limit(&error) =>
                {
                    freed.await;
                }
                admitted => return admitted,
            }
        }
    }

    /// A fresh child (no history, the caller's tools) that runs `prompt` to its end while the
    /// call waits, its answer held to `schema` when there is one: a Ralph round, a workflow's
    /// agent. It waits for a place among the running children.
    pub(crate) async fn run_fresh_child(
        &self,
        label: String,
        prompt: String,
        schema: Option<Arc<crate::OutputSchema>>,
        ctx: &ToolContext,
    ) -> Result<EndedChild, ToolError> {
        let (slot, n) = self.admit_waiting().await?;
        let spec = ChildSpec {
            allow: None,
            read_only: false,
            fork: false,
            role: None,
        };
        let child = self.start_child(spec, n, label, false, schema)?;
        let ended = self.finish_foreground(child, prompt, ctx).await;
        drop(slot);
        ended
    }

    /// A place among the children running at once, or the error naming that limit.
    fn take_running_slot(&self) -> Result<RunningSlot, ToolError> {
        let limits = &self.kit.limits;
        let running = self.kit.running.fetch_add(1, Ordering::SeqCst);
        let slot = RunningSlot(self.kit.clone());
        if running >= limits.max_concurrent {
            return Err(ToolError::coded(
                "SubagentError",
                "SUBAGENT_LIMIT",
                format!(
                    "subagent limit reached: {running} subagents are running, the most at once \
                     (subagents.max_concurrent = {}; a background subagent keeps its place \
                     until this run ends, idle or not): wait for a foreground one to finish, or \
                     do it yourself",
                    limits.max_concurrent
                ),
            ));
        }
        Ok(slot)
    }
}

/// A child made and not yet run ([`SubagentTool::start_child`]).
pub(crate) struct StartedChild {
    agent: Agent,
    pub(crate) record: SubagentRunRecord,
    forward: tokio::task::JoinHandle<()>,
}

fn log_failure(e: crate::CoreError) -> ToolError {
    ToolError::plain(format!("subagent run failed: its session log: {e}"))
}

/// Sends a child's events to its parent's watchers, tagged with its id, until the child is
/// dropped.
fn forward(
    mut events: mpsc::UnboundedReceiver<AgentEvent>,
    parent: UnboundedSender<AgentEvent>,
    agent_id: String,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            let _ = parent.send(AgentEvent::Child {
                agent_id: agent_id.clone(),
                event: Box::new(event),
            });
        }
    })
}

/// A place among the running subagents, given back when the run ends however it ends.
pub(crate) struct RunningSlot(Arc<ChildKit>);

impl Drop for RunningSlot {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
        self.0.freed.notify_waiters();
    }
}

/// Whether `error` is the limit on children running at once, which frees up as they end.
fn is_running_limit(error: &ToolError) -> bool {
    error.code() == Some("SUBAGENT_LIMIT") && error.message.contains("running, the most at once")
}

/// The short description, or the task itself when the model gave none.
fn subagent_summary(args: &serde_json::Value) -> Option<String> {
    let text = |key: &str| dsh_tools::text_arg(args, key);
    text("description")
        .or_else(|| text("prompt"))
        .map(str::to_owned)
}
