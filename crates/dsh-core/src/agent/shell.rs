//! [`Agent::run_shell`]: a command the user runs themselves (`!cmd` in the terminal UI), with
//! no model request. It goes through the same `bash` tool the model's calls use, so it runs
//! under the session's sandbox and permission mode (plan mode's read-only sandbox included),
//! and it is a turn of the session: the model reads the command and its output next turn.

use dsh_protocol::{Message, Record, TurnEndReason, Usage};
use dsh_tools::ToolContext;
use futures_util::future::BoxFuture;

use super::{Agent, Stop, TurnSummary};
use crate::CoreError;

impl Agent {
    /// Runs `command` with the session's `bash` tool as a turn of its own: a `turn/start`, the
    /// command and its output as one user message ([`crate::user_shell::message`], redacted as
    /// any result is), and a `turn/end`. Its running output comes as
    /// [`super::AgentEvent::ToolOutput`] with the call id `shell-TURN` when the front end
    /// watches output. No hook or review sees it: the user typed it. The summary's text is
    /// the tool's result; a command that failed still completes the turn (its status is in the
    /// text), and a stop ends it as a stopped turn.
    ///
    /// Boxed so that it is compiled once, here, and not in every front end that awaits it.
    pub fn run_shell<'a>(
        &'a mut self,
        command: &'a str,
        stop: &'a Stop,
    ) -> BoxFuture<'a, Result<TurnSummary, CoreError>> {
        Box::pin(self.shell_turn(command, stop))
    }

    async fn shell_turn(&mut self, command: &str, stop: &Stop) -> Result<TurnSummary, CoreError> {
        let turn = self.start_turn().await?;
        // The command may change files: the turn can be rewound like any other.
        self.checkpoint_turn_start().await?;
        let ctx = ToolContext {
            call_id: format!("shell-{turn}"),
            cwd: self.session.cwd().to_path_buf(),
            cancel: stop.token().clone(),
            session: self.tool_session.clone(),
        };
        let arguments = serde_json::json!({
            "command": command,
            "description": "the user's own command",
        })
        .to_string();
        let outcome = self.tools.prepare("bash", &arguments).run(&ctx).await;
        let text = self.redacted(outcome.text());
        let command = self.redacted(command.to_owned());
        self.commit(Record::UserMessage {
            turn,
            message: Message::user_text(crate::user_shell::message(&command, &text)),
            instructions: None,
        })?;
        let reason = if stop.is_requested() {
            stop.turn_end()
        } else {
            TurnEndReason::Completed
        };
        self.end_turn(TurnSummary {
            turn,
            reason,
            text,
            usage: Usage::default(),
            steps: 0,
        })
        .await
    }
}
