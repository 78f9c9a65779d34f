//! Messages a person sends while the agent works ([`Steering`]): the agent reads them at its
//! next step boundary, once the calls of the step before have ended, so the model sees them
//! before its next request instead of after the turn. The agent's side is in `turn.rs`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

/// Where a front end leaves messages for the agent's turn under way. Clones share the inbox.
///
/// The agent takes every waiting message at its next step boundary (before each request but
/// the turn's first) and commits each as a user message, in order, after the results of the
/// calls that ran. What is still waiting when the turn ends is the front end's to take back
/// ([`Steering::take_all`]) and send as a message of its own; a front end that leaves it has
/// it delivered at a step boundary of the next turn.
#[derive(Debug, Clone, Default)]
pub struct Steering {
    inbox: Arc<Mutex<VecDeque<String>>>,
}

impl Steering {
    /// Leaves `text` for the next step boundary.
    pub fn push(&self, text: String) {
        self.lock().push_back(text);
    }

    /// Every message still waiting, oldest first; the inbox is empty after.
    pub fn take_all(&self) -> Vec<String> {
        self.lock().drain(..).collect()
    }

    /// How many messages wait.
    pub fn waiting(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<String>> {
        // A panic while holding the lock cannot leave the queue half changed.
        self.inbox.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
