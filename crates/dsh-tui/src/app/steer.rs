//! Steering: a message typed while the model works goes to the run's inbox
//! ([`dsh_core::Steering`]), which the agent reads at its next step boundary, once the calls
//! running have ended. The live area lists what waits; the transcript shows each message when
//! the log has it. What a turn leaves unread is sent as the next message; what an interrupt
//! leaves goes back to the composer with what was queued.

use dsh_protocol::{Record, View};

use super::App;

impl App {
    /// Whether Enter now leaves the message for the turn's next step: a model turn runs and
    /// is not being interrupted.
    pub(super) fn can_steer(&self) -> bool {
        self.steer.is_some()
            && self
                .running
                .as_ref()
                .is_some_and(|r| r.steerable && !r.interrupted)
    }

    /// Leaves `text` in the run's inbox, and lists it under the live area until it is read.
    pub(super) fn steer(&mut self, text: String) {
        if let Some(steer) = &self.steer {
            steer.push(text.clone());
            self.steering.push_back(text);
        }
    }

    /// A user message the agent committed during the turn: the oldest waiting message, once
    /// its delivery is in the log (UserPromptSubmit hooks may have added to its end).
    pub(super) fn steered(&mut self, record: &Record) {
        if self.running.is_none() {
            return;
        }
        if let View::User { message } = record.view()
            && (self.steering.front()).is_some_and(|sent| message.text().starts_with(sent.as_str()))
        {
            self.steering.pop_front();
        }
    }

    /// Takes back what the agent has not read (an interrupt): those messages, oldest first.
    /// Any read meanwhile stay listed until the transcript shows them.
    pub(super) fn take_back_steering(&mut self) -> Vec<String> {
        let back = self
            .steer
            .as_ref()
            .map(dsh_core::Steering::take_all)
            .unwrap_or_default();
        let read = self.steering.len().saturating_sub(back.len());
        self.steering.truncate(read);
        back
    }

    /// At a turn's end: what the agent did not read (the model answered without calling a
    /// tool, so no step came) is sent next, as one message, ahead of what was queued.
    pub(super) fn steering_left(&mut self) {
        let left = self.take_back_steering();
        self.steering.clear();
        if !left.is_empty() {
            self.queued.push_front(left.join("\n\n"));
        }
    }
}
