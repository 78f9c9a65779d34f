//! Which session a front end opens: the one choice the session flags (`--session-id`,
//! `--continue`, `--fork`) make on the command line, for front ends that open sessions as the
//! person asks (the terminal UI's `/new` and `/resume`, the web app's sessions, an editor's
//! `session/new` and `session/load`, the MCP server mode's `dsh-reply`).

use tokio::sync::mpsc::UnboundedSender;

use crate::{AgentBuilder, Flags, McpServers, Run, SetupError};

/// A session to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opening {
    /// A new session.
    New,
    /// The session with this id, going on where it stopped.
    Resume(String),
    /// A new session starting from a copy of this one's history.
    Fork(String),
}

impl Opening {
    /// The flags that open this session: `base` with its own session choice replaced.
    pub fn flags(&self, base: &Flags) -> Flags {
        let (session_id, fork) = match self {
            Opening::New => (None, false),
            Opening::Resume(id) => (Some(id.clone()), false),
            Opening::Fork(id) => (Some(id.clone()), true),
        };
        Flags {
            session_id,
            continue_latest: false,
            fork,
            ..base.clone()
        }
    }
}

impl AgentBuilder {
    /// [`AgentBuilder::open`] for a front end that leaves the run's MCP servers to the run:
    /// they are stopped when it is closed ([`Run::close`]) or cannot be opened.
    pub async fn open_run(self, notices: UnboundedSender<String>) -> Result<Run, SetupError> {
        self.open(&McpServers::default(), notices).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_opening_replaces_the_flags_session_choice_and_keeps_the_rest() {
        let base = Flags {
            session_id: Some("old".into()),
            continue_latest: true,
            fork: true,
            model: Some("m".into()),
            ..Flags::default()
        };
        let new = Opening::New.flags(&base);
        assert_eq!(
            (new.session_id, new.continue_latest, new.fork),
            (None, false, false)
        );
        assert_eq!(new.model.as_deref(), Some("m"));
        let resumed = Opening::Resume("s1".into()).flags(&base);
        assert_eq!(
            (resumed.session_id.as_deref(), resumed.fork),
            (Some("s1"), false)
        );
        let forked = Opening::Fork("s1".into()).flags(&base);
        assert_eq!(
            (forked.session_id.as_deref(), forked.fork),
            (Some("s1"), true)
        );
        assert!(!forked.continue_latest);
    }
}
