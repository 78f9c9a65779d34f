//! What the agents of one run share to start children: the limits, and the counts they are
//! checked against. A leaf: the agent's wiring names it, and the subagent tools use it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use dsh_protocol::SubagentRunRecord;

use super::custom::{CustomAgent, CustomAgents};
use crate::config::SubagentLimits;

/// What every agent of a run starts its children under.
pub(crate) struct ChildKit {
    pub(crate) limits: SubagentLimits,
    /// The bounds of a workflow run (`[workflows]`).
    pub(crate) workflows: dsh_workflow::Limits,
    /// Subagents started in this run against `max_total` (Ralph's rounds and workflows' agents
    /// are bounded by their own limits), and running now.
    pub(super) started: AtomicU32,
    pub(super) running: AtomicU32,
    /// Ids handed out in this run, every child's: one counter, so two never share one.
    pub(super) numbered: AtomicU32,
    /// Told when a running child's place frees up.
    pub(super) freed: tokio::sync::Notify,
    /// The highest id number a resumed session already gave: new ids come after it.
    pub(super) numbered_before: AtomicU32,
    /// The custom subagents the `subagent` tool offers by name.
    pub(crate) agents: Arc<CustomAgents>,
}

/// What one child is to be.
pub(crate) struct ChildSpec {
    /// Only these tools (besides the run's own lists); `None`: the parent's.
    pub allow: Option<Vec<String>>,
    /// Under a read-only sandbox, whatever the parent's mode.
    pub read_only: bool,
    /// Whether it begins from the parent's history (the workspace instructions are in it).
    pub fork: bool,
    /// The custom subagent it is: its instructions and model.
    pub role: Option<Arc<CustomAgent>>,
}

impl ChildKit {
    pub(crate) fn new(
        limits: SubagentLimits,
        workflows: dsh_workflow::Limits,
        agents: Arc<CustomAgents>,
    ) -> Arc<ChildKit> {
        Arc::new(ChildKit {
            agents,
            limits,
            workflows,
            started: AtomicU32::new(0),
            running: AtomicU32::new(0),
            numbered: AtomicU32::new(0),
            freed: tokio::sync::Notify::new(),
            numbered_before: AtomicU32::new(0),
        })
    }

    /// Ids of new children come after those of `recorded` (a resumed session's children).
    pub(crate) fn number_after(&self, recorded: &[SubagentRunRecord]) {
        let highest = recorded
            .iter()
            .flat_map(|run| {
                let own = run.agent_id.strip_prefix("subagent-")?.parse::<u32>().ok();
                Some(own?.max(run.ids_used))
            })
            .max()
            .unwrap_or(0);
        self.numbered_before.fetch_max(highest, Ordering::SeqCst);
    }

    /// The highest id number handed out so far, a resumed session's included.
    pub(super) fn ids_used(&self) -> u32 {
        self.numbered_before.load(Ordering::SeqCst) + self.numbered.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use dsh_protocol::{TurnEndReason, Usage};

    use super::*;

    fn recorded(agent_id: &str, ids_used: u32) -> SubagentRunRecord {
        SubagentRunRecord {
            turn: 1,
            agent_id: agent_id.into(),
            session_id: "s".into(),
            label: "task".into(),
            fork: false,
            tools: None,
            read_only: false,
            background: true,
            ids_used,
            reason: TurnEndReason::Completed,
            usage: Usage::default(),
        }
    }

    /// Ids after a resume come after every id the recorded run handed out, its grandchildren's
    /// (which the top log names only through `idsUsed`) included.
    #[test]
    fn a_resumed_run_numbers_after_every_id_it_handed_out() {
        let limits = SubagentLimits {
            max_depth: 2,
            max_concurrent: 4,
            max_total: 16,
            max_tokens: 1,
        };
        let kit = ChildKit::new(limits, dsh_workflow::Limits::default(), Arc::default());
        kit.number_after(&[recorded("subagent-1", 3), recorded("subagent-2", 0)]);
        assert_eq!(kit.ids_used(), 3);
        kit.number_after(&[recorded("subagent-7", 0)]);
        assert_eq!(kit.ids_used(), 7);
    }
}
