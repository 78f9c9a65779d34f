//! The session's title: after the first turn of a session whose run asks for one
//! (`sessions.titles`), one short request on the session's own route has the model name it in
//! a few words, from the user's first message. It is a `session/title` record: lists show it
//! where the user gave no title, and what it billed is counted in the run's usage and the
//! session's. A request that fails or answers nothing usable is logged and changes nothing:
//! lists go on showing the first task.

use dsh_llm::{Effort, ModelRequest};
use dsh_protocol::{Block, Message, Record, Role, SessionTitleRecord, Usage};

use super::{Agent, Stop};
use crate::CoreError;

/// What the title request tells the model. Its first words also mark the request for the
/// test kit's scripted server, which answers it apart from the conversation's script.
pub(crate) const TITLE_INSTRUCTION: &str = "Write a title for this coding session: a few words \
     (at most six) that say what the user asked for, in the user's language. Answer with the \
     title alone, without quotes, a trailing full stop or any other text.";

/// The most the model may answer (the reference's 64): a title is a few words.
const TITLE_MAX_TOKENS: u32 = 64;
/// The most of the first message the model is sent: a title needs its gist, not a pasted log.
const FIRST_MESSAGE_CHARS: usize = 2_000;
/// The most characters a written title keeps.
const TITLE_CHARS: usize = 80;

impl Agent {
    /// Has the model title the session, once per agent, when the run asks for titles, the
    /// session has none yet and its first task was the user's; returns what the request
    /// billed. Never an error for the request itself: a failure leaves the session as it was.
    pub(super) async fn title_session(&mut self, stop: &Stop) -> Result<Usage, CoreError> {
        if !self.config.titles || self.titled || stop.is_requested() {
            return Ok(Usage::default());
        }
        self.titled = true;
        let given = crate::session_list::read_title(self.session.dir());
        if self.session.written_title().is_some() || given.is_some() {
            return Ok(Usage::default());
        }
        let Some(first) = first_task(self.session.history()) else {
            return Ok(Usage::default());
        };
        let messages = [Message::user_text(format!(
            "{TITLE_INSTRUCTION}\n\nThe user's first message:\n<message>\n{first}\n</message>"
        ))];
        let request = ModelRequest {
            model: &self.config.model,
            system: TITLE_INSTRUCTION,
            messages: &messages,
            tools: &[],
            // Thinking would spend the few tokens a title has.
            effort: Effort::Off,
            max_output_tokens: Some(TITLE_MAX_TOKENS),
        };
        // Not an answer to the user: nothing is shown as it streams.
        let mut quiet = |_| {};
        let answer = tokio::select! {
            biased;
            () = stop.token().cancelled() => return Ok(Usage::default()),
            answer = self.provider.complete(request, &mut quiet) => answer,
        };
        let completion = match answer {
            Ok(completion) => completion,
            Err(error) => {
                self.title_failed(&error.failure.message);
                return Ok(error.usage);
            }
        };
        let usage = completion.billed();
        let Some(title) = cleaned(&completion.message.text()) else {
            self.title_failed("the answer held no title");
            return Ok(usage);
        };
        self.commit(Record::SessionTitle(SessionTitleRecord {
            turn: self.session.last_turn(),
            title,
            model: self.config.model.clone(),
            usage,
        }))?;
        Ok(usage)
    }
}

impl Agent {
    /// Says, as a notice (never stored), that the title request failed and why.
    fn title_failed(&self, why: &str) {
        let _ = self.events.send(super::AgentEvent::Notice(format!(
            "the session's title request failed ({why}); it keeps its first task as its name"
        )));
    }
}

/// The text of the session's first user message, cut to what a title needs; `None` when the
/// history holds none (a fork's seed counts: it was a user's task too).
fn first_task(history: &[Message]) -> Option<String> {
    let message = history.iter().find(|m| {
        m.role == Role::User
            && m.content
                .iter()
                .any(|b| matches!(b, Block::Text { text } if !text.trim().is_empty()))
    })?;
    let text = message.content.iter().find_map(|b| match b {
        Block::Text { text } if !text.trim().is_empty() => Some(text.trim()),
        _ => None,
    })?;
    Some(text.chars().take(FIRST_MESSAGE_CHARS).collect())
}

/// The model's answer as a title: its first non-empty line, without the quotes, markdown
/// marks, `Title:` label or full stop models add, one line of at most [`TITLE_CHARS`]
/// characters with no control characters; `None` when nothing is left.
pub(crate) fn cleaned(answer: &str) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line
        .strip_prefix("Title:")
        .or_else(|| line.strip_prefix("title:"))
        .unwrap_or(line);
    let trimmed = line
        .trim()
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | '*' | '#' | '“' | '”'))
        .trim()
        .trim_end_matches('.')
        .trim();
    let title: String = trimmed
        .chars()
        .filter(|c| !c.is_control())
        .take(TITLE_CHARS)
        .collect();
    let title = title.trim().to_owned();
    (!title.is_empty()).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::cleaned;

    #[test]
    fn an_answer_is_cleaned_into_one_short_line() {
        assert_eq!(
            cleaned("Fix the login bug").as_deref(),
            Some("Fix the login bug")
        );
        assert_eq!(
            cleaned("\n  \"Rename the config key.\"\nBecause...").as_deref(),
            Some("Rename the config key")
        );
        assert_eq!(
            cleaned("Title: **Add tests**").as_deref(),
            Some("Add tests")
        );
        assert_eq!(cleaned("   \n\t").as_deref(), None);
        assert_eq!(cleaned("\"\"").as_deref(), None);
        assert_eq!(
            cleaned(&"abcdefghij".repeat(10)).unwrap().chars().count(),
            80
        );
    }
}
