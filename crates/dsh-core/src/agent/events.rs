//! What the agent reports while it runs, and how a run went: the records it commits, each
//! appended to the session log before it is sent, live deltas and notices. The rest of core
//! (compaction, hooks, subagents) reports through these too, so they depend on nothing else of
//! the agent.

use dsh_llm::StreamDelta;
use dsh_protocol::{Record, TurnEndReason, Usage};
use tokio::sync::mpsc::UnboundedSender;

use crate::{CoreError, Session};

/// What the agent reports while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// A record, already in the session log.
    Record(Record),
    /// A live piece of an answer still streaming; not stored.
    Delta(StreamDelta),
    /// A line for the user from outside the conversation (a hook that failed), not stored.
    Notice(String),
    /// New output of a call still running (a command's stdout or stderr as it arrives), for
    /// a front end that shows it live; not stored (the result has it).
    ToolOutput { call_id: String, text: String },
    /// An event of a subagent's run (in its own log), tagged with its id.
    Child {
        agent_id: String,
        event: Box<AgentEvent>,
    },
}

/// How a turn went.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSummary {
    pub turn: u32,
    pub reason: TurnEndReason,
    /// The text of the turn's last assistant message that had any.
    pub text: String,
    /// Every request of the turn.
    pub usage: Usage,
    /// The steps this agent ended (its `StepEnd` records), in every turn the summary covers;
    /// its subagents' steps are in their own logs.
    pub steps: u32,
}

impl TurnSummary {
    /// The summary of a run that went on with `next` (a wake, a goal round): its usage and
    /// steps added, and how it ended and what it answered taken from `next` (the last
    /// answer with text stands).
    pub(super) fn went_on_with(&mut self, next: TurnSummary) {
        self.usage.add(&next.usage);
        self.steps += next.steps;
        if !next.text.is_empty() {
            self.text = next.text;
        }
        self.turn = next.turn;
        self.reason = next.reason;
    }
}

/// Appends `record` to the session log, then sends it as an event.
pub(crate) fn commit(
    session: &mut Session,
    events: &UnboundedSender<AgentEvent>,
    record: Record,
) -> Result<(), CoreError> {
    let envelope = session.commit(record)?;
    let _ = events.send(AgentEvent::Record(envelope.record));
    Ok(())
}
