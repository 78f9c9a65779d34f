//! A run ready for its task ([`Run`]), the task it runs ([`RunningTask`]), and the processes it
//! started outside the agent ([`Processes`]).

use std::pin::Pin;
use std::sync::Arc;

use dsh_mcp::McpServers;
use dsh_tools::Shell;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use crate::config::Settings;
use crate::{Agent, AgentEvent, CoreError, Stop, TurnSummary};

/// A run ready for its task.
pub struct Run {
    /// What the run was built with (a rewind's checkpoint store and coverage come from it).
    pub(crate) settings: Arc<Settings>,
    pub agent: Agent,
    /// What the agent reports ([`Run::start_task`], [`Run::take_events`]); ends when the agent
    /// is dropped.
    pub(crate) events: UnboundedReceiver<AgentEvent>,
    /// The model has prices: every request's usage comes back with its cost (`costUsd`).
    pub priced: bool,
    /// The skills found for the run (name, description), as `/skills` lists them.
    pub skills: Vec<(String, String)>,
    /// The run's tools as front ends describe their calls ([`dsh_tools::ToolCatalog::describe`]): one
    /// lookup for every front end, which follows the tools that join later (MCP servers').
    pub catalog: crate::ToolCatalog,
    pub(crate) processes: Processes,
    /// The day's prune of the checkpoint store, if this run started it: waited for when the
    /// run is dropped.
    pub(crate) _pruning: Option<crate::checkpoints::Pruning>,
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
    pub(crate) shell: Arc<Shell>,
    pub(crate) mcp: McpServers,
    /// Where the user is told what the end of the run set aside.
    pub(crate) notices: UnboundedSender<String>,
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
                self.agent.session().instructions_given(),
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
        // The SessionEnd hooks first, while the session's shell and sandbox are still there;
        // nothing stops them but their own timeouts.
        if let Some(hooks) = self.agent.hooks() {
            let unstopped = tokio_util::sync::CancellationToken::new();
            let fields = serde_json::json!({"reason": "exit"});
            hooks
                .fire(crate::HookEvent::SessionEnd, None, fields, &unstopped)
                .await;
        }
        let processes = self.processes();
        drop(self);
        processes.shutdown().await;
    }
}
