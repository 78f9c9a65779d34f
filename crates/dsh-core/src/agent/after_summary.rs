//! What a summary must not take away: once one has replaced the older part of the history, the
//! workspace instructions and the session's goal, which that part held, are given to the model
//! again before its next request.

use dsh_protocol::{GoalPhase, Message, Record};

use super::Agent;
use crate::CoreError;
use crate::compaction::GOAL_RESTATED;
use crate::instructions::UntrackedDelivery;

impl Agent {
    /// After a compaction of `turn`: when a summary replaced part of the history, the
    /// workspace instructions (read again, as a new session gets them) unless the part kept
    /// still holds them, and the goal while it is active or paused.
    pub(crate) fn redeliver_after_summary(&mut self, turn: u32) -> Result<(), CoreError> {
        if !self.compactor.take_summarised() {
            return Ok(());
        }
        let kept = (self.session.history().iter()).any(|message| {
            (message.role == dsh_protocol::Role::User)
                && UntrackedDelivery::read(&message.text()) == Some(UntrackedDelivery::Baseline)
        });
        if let (false, Some(settings), Some((home, shown))) = (
            kept,
            &self.config.nested_instructions,
            &self.config.instructions_home,
        ) && let Some(delivery) =
            crate::instructions::baseline(self.session.cwd(), home, shown, settings)
        {
            let text = self.redacted(delivery.text);
            self.commit(Record::UserMessage {
                turn,
                message: Message::user_text(text),
                instructions: Some(delivery.files),
            })?;
        }
        let goal = (self.session.goal_change()).map(|change| change.goal.clone());
        if let Some(goal) =
            goal.filter(|g| matches!(g.phase, GoalPhase::Active | GoalPhase::Paused))
        {
            let phase = match goal.phase {
                GoalPhase::Paused => "paused",
                _ => "active",
            };
            self.commit(Record::UserMessage {
                turn,
                message: Message::user_text(format!(
                    "{GOAL_RESTATED} ({phase}, {} of {} rounds used): {}\n</system-reminder>",
                    goal.rounds_started, goal.max_goal_rounds, goal.objective
                )),
                instructions: None,
            })?;
        }
        Ok(())
    }
}
