//! Subagents in the background: `subagent` with `run_in_background: true` returns an id at
//! once; the child works on, and each time it ends a turn the agent that started it is told,
//! at its next step (or woken for it when it has answered), with what the child said. It
//! stays available for follow-ups (`send_message`), can be stopped mid-turn
//! (`interrupt_agent`) and listed (`list_agents`). What a turn billed is counted when its
//! notice is delivered; whatever still runs when the run ends is stopped, and counted.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use dsh_protocol::{SubagentRunRecord, TurnEndReason, Usage};
use tokio::sync::{Notify, mpsc};

use crate::agent::stop::Stop;

pub(super) mod control;

/// The background children of one agent.
#[derive(Default)]
pub(crate) struct BackgroundAgents {
    children: Mutex<Vec<Arc<Child>>>,
    /// Ended turns not yet told to the parent.
    settled: Mutex<Vec<Settled>>,
    /// Background children a resumed session recorded, not running in this process: a
    /// message resumes one.
    dormant: Mutex<Vec<SubagentRunRecord>>,
    /// Set by [`BackgroundAgents::stop_all`]: no child begins another turn.
    closed: std::sync::atomic::AtomicBool,
    changed: Notify,
}

/// One background child.
pub(crate) struct Child {
    pub(crate) id: String,
    pub(crate) label: String,
    /// Its next turns' prompts.
    inbox: mpsc::UnboundedSender<String>,
    /// The stop of the turn it runs, while it runs one.
    current: Mutex<Option<Stop>>,
    /// Messages sent to it that no turn has taken yet: it counts as at work until they are.
    queued: std::sync::atomic::AtomicUsize,
    /// An interrupt that came while a turn was queued but not begun: that turn is stopped.
    interrupt_next: std::sync::atomic::AtomicBool,
    /// The children it started in the background itself.
    own: Arc<BackgroundAgents>,
}

impl Child {
    /// In a turn, or with a message waiting for one.
    fn is_at_work(&self) -> bool {
        lock(&self.current).is_some() || self.queued.load(Ordering::SeqCst) > 0
    }
}

/// A child's ended turn, for its parent.
pub(crate) struct Settled {
    /// The notice the parent reads.
    pub(crate) text: String,
    /// The link its parent's log records.
    pub(crate) record: SubagentRunRecord,
}

impl BackgroundAgents {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(BackgroundAgents::default())
    }

    /// Registers a child whose turns come from `inbox`, which holds its first prompt, and whose
    /// own background children are `own`; returns its handle.
    pub(crate) fn add(
        &self,
        id: String,
        label: String,
        inbox: mpsc::UnboundedSender<String>,
        own: Arc<BackgroundAgents>,
    ) -> Arc<Child> {
        let child = Arc::new(Child {
            id,
            label,
            inbox,
            current: Mutex::new(None),
            queued: std::sync::atomic::AtomicUsize::new(1),
            interrupt_next: std::sync::atomic::AtomicBool::new(false),
            own,
        });
        lock(&self.children).push(child.clone());
        child
    }

    /// A child is to begin a turn under `stop`; false, and it must not, once the run that
    /// started it is over (it is then let go: nothing of it counts as at work).
    pub(crate) fn began(&self, child: &Child, stop: Stop) -> bool {
        // Under the lock interrupt_agent and stop_all look under: an interrupt lands on this
        // turn or the next, and a closing registry sees this turn or refuses it.
        let mut current = lock(&child.current);
        if self.closed.load(Ordering::SeqCst) {
            child.queued.store(0, Ordering::SeqCst);
            drop(current);
            lock(&self.children).retain(|known| !std::ptr::eq(known.as_ref(), child));
            return false;
        }
        if child.interrupt_next.swap(false, Ordering::SeqCst) {
            stop.request(dsh_protocol::AbortReason::Parent);
        }
        *current = Some(stop);
        let _ = child
            .queued
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        true
    }

    /// A child ended a turn: its parent is told.
    pub(crate) fn ended(&self, child: &Child, summary_text: &str, record: SubagentRunRecord) {
        let opening = match &record.reason {
            TurnEndReason::Completed => {
                "finished and will do no further work unless you send it more."
            }
            TurnEndReason::Aborted { .. } => "was stopped before it finished.",
            TurnEndReason::MaxTokens => "ran out of room before it finished.",
            _ => "failed before it finished.",
        };
        let closing = if summary_text.is_empty() {
            "It left no closing message.".to_owned()
        } else {
            format!("Its closing message:\n{summary_text}")
        };
        // The notice is there before the child stops counting as at work: whoever sees it idle
        // finds its notice.
        lock(&self.settled).push(Settled {
            text: format!("Background subagent {} {opening}\n{closing}", child.id),
            record,
        });
        *lock(&child.current) = None;
        self.changed.notify_waiters();
    }

    /// The ended turns not told yet.
    pub(crate) fn take(&self) -> Vec<Settled> {
        std::mem::take(&mut *lock(&self.settled))
    }

    /// Whether an ended turn waits to be told.
    pub(crate) fn has_news(&self) -> bool {
        !lock(&self.settled).is_empty()
    }

    /// Whether a child is in a turn.
    pub(crate) fn any_running(&self) -> bool {
        lock(&self.children).iter().any(|child| child.is_at_work())
    }

    /// Waits until a child ends a turn, or `limit` passes; false when none was running.
    pub(crate) async fn wait_any(&self, limit: Duration) -> bool {
        // Listening before looking: a turn that ends in between is not missed.
        let notified = self.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.has_news() {
            return true;
        }
        if !self.any_running() {
            return false;
        }
        let _ = tokio::time::timeout(limit, notified).await;
        true
    }

    /// Takes children again: a run of the agent begins (a background child runs once per
    /// message, and each run ends with [`BackgroundAgents::stop_all`]).
    pub(crate) fn open(&self) {
        self.closed.store(false, Ordering::SeqCst);
    }

    /// Stops every child's turn and lets them go (their inboxes close), waiting up to `limit`
    /// for the turns to end.
    pub(crate) async fn stop_all(&self, limit: Duration) {
        self.closed.store(true, Ordering::SeqCst);
        let children: Vec<Arc<Child>> = std::mem::take(&mut *lock(&self.children));
        for child in &children {
            if let Some(stop) = lock(&child.current).as_ref() {
                stop.request(dsh_protocol::AbortReason::Parent);
            }
        }
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !children.iter().any(|child| lock(&child.current).is_some()) {
                break;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                break;
            }
        }
    }

    /// One line per background child (`<id> [running|idle] — <label>`), and with
    /// `descendants` theirs below each, indented.
    fn describe(&self, descendants: bool, indent: &str, lines: &mut Vec<String>) {
        let children = lock(&self.children).clone();
        for child in children {
            let status = if child.is_at_work() {
                "running"
            } else {
                "idle"
            };
            lines.push(format!("{indent}{} [{status}] — {}", child.id, child.label));
            if descendants {
                child.own.describe(true, &format!("{indent}  "), lines);
            }
        }
        for run in lock(&self.dormant).iter() {
            lines.push(format!("{indent}{} [idle] — {}", run.agent_id, run.label));
        }
    }

    fn find(&self, id: &str) -> Option<Arc<Child>> {
        lock(&self.children).iter().find(|c| c.id == id).cloned()
    }

    /// Takes in the background children of a resumed session's records (the latest record of
    /// each): they are listed as idle, and a message resumes one.
    pub(crate) fn recorded(&self, runs: &[SubagentRunRecord]) {
        lock(&self.dormant).extend(runs.iter().filter(|run| run.background).cloned());
    }

    /// Takes the record of a dormant child out of the list, to resume it.
    fn wake(&self, id: &str) -> Option<SubagentRunRecord> {
        let mut dormant = lock(&self.dormant);
        let at = dormant.iter().position(|run| run.agent_id == id)?;
        Some(dormant.remove(at))
    }
}

impl std::fmt::Debug for BackgroundAgents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<String> = lock(&self.children).iter().map(|c| c.id.clone()).collect();
        f.debug_struct("BackgroundAgents")
            .field("children", &ids)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The usage of the settled turns, summed.
pub(crate) fn usage_of(settled: &[Settled]) -> Usage {
    Usage::sum(settled.iter().map(|s| &s.record.usage))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(registry: &BackgroundAgents, id: &str) -> Arc<Child> {
        let (inbox, _turns) = mpsc::unbounded_channel();
        registry.add(id.into(), "task".into(), inbox, BackgroundAgents::new())
    }

    /// A run's end refuses the turns still to begin and lets their children go; the agent's
    /// next run (a background child's next message) takes children again.
    #[tokio::test]
    async fn a_closed_registry_refuses_turns_until_the_next_run_opens_it() {
        let registry = BackgroundAgents::new();
        let early = child(&registry, "subagent-1");
        assert!(
            registry.any_running(),
            "a child with its first prompt is at work"
        );
        registry.stop_all(Duration::ZERO).await;
        assert!(!registry.began(&early, Stop::new()));
        let late = child(&registry, "subagent-2");
        assert!(!registry.began(&late, Stop::new()));
        assert!(!registry.any_running(), "a refused child is not waited for");
        registry.open();
        let next = child(&registry, "subagent-3");
        assert!(registry.began(&next, Stop::new()));
        assert!(registry.any_running());
        let mut record = SubagentRunRecord {
            turn: 0,
            agent_id: "subagent-3".into(),
            session_id: "s".into(),
            label: "task".into(),
            fork: false,
            tools: None,
            read_only: false,
            background: true,
            ids_used: 3,
            reason: TurnEndReason::Completed,
            usage: Usage::default(),
        };
        record.usage.total_tokens = 7;
        registry.ended(&next, "done", record);
        assert!(registry.has_news() && !registry.any_running());
        assert_eq!(usage_of(&registry.take()).total_tokens, 7);
    }
}
