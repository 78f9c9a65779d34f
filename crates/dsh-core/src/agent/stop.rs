//! A request to stop a run, shared by everything a run starts (tools, hooks, subagents).

use std::sync::{Arc, OnceLock};

use dsh_protocol::{AbortReason, TurnEndReason};
use tokio_util::sync::CancellationToken;

/// A request to stop the run, with its reason. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    token: CancellationToken,
    reason: Arc<OnceLock<AbortReason>>,
    /// Set when the run's time ran out (`--timeout`): the turn ends as `timeout`.
    expired: Arc<OnceLock<String>>,
    /// For one turn's stop ([`Stop::for_turn`]): the run's reason, when the run was stopped.
    run_reason: Option<Arc<OnceLock<AbortReason>>>,
}

impl Stop {
    pub fn new() -> Self {
        Self::default()
    }

    /// A stop for a subagent: requested on its own, or whenever the parent's `token` is.
    pub(crate) fn child_of(token: &CancellationToken) -> Self {
        let stop = Stop {
            token: token.child_token(),
            reason: Arc::default(),
            expired: Arc::default(),
            run_reason: None,
        };
        if token.is_cancelled() {
            let _ = stop.reason.set(AbortReason::Parent);
        }
        stop
    }

    /// A stop for one turn of this run (a message of a `--input-format stream-json` run): it
    /// can be requested alone, and it is requested, with the run's reason, when the run is.
    pub fn for_turn(&self) -> Stop {
        Stop {
            token: self.token.child_token(),
            reason: Arc::default(),
            expired: self.expired.clone(),
            run_reason: Some(self.reason.clone()),
        }
    }

    /// Asks the run to stop; the first reason given is kept.
    pub fn request(&self, reason: AbortReason) {
        let _ = self.reason.set(reason);
        self.token.cancel();
    }

    pub fn is_requested(&self) -> bool {
        self.token.is_cancelled()
    }

    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Why the run's time ran out, once it has.
    pub fn expired(&self) -> Option<&str> {
        self.expired.get().map(String::as_str)
    }

    /// Stops the run because its time ran out; `message` says which limit.
    pub fn expire(&self, message: String) {
        let _ = self.expired.set(message);
        self.token.cancel();
    }

    pub(super) fn turn_end(&self) -> TurnEndReason {
        if let Some(message) = self.expired.get() {
            return TurnEndReason::Timeout {
                message: message.clone(),
            };
        }
        // Cancelled with no reason of its own: the run's, or a subagent's parent stopped.
        let reason = (self.reason.get().cloned())
            .or_else(|| self.run_reason.as_ref().and_then(|r| r.get().cloned()))
            .unwrap_or(AbortReason::Parent);
        TurnEndReason::Aborted { reason }
    }
}
