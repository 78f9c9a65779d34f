use std::path::PathBuf;

use dsh_config::{SetupError, SetupKind};

/// A failure of the agent itself, as opposed to a failed turn (which is a
/// [`TurnEndReason`](dsh_protocol::TurnEndReason)).
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error("cannot write the session log {}: {source}", path.display())]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the session log {} is damaged: {message}; it cannot be resumed (start a new session, \
         or move the damaged lines out of the file)",
        path.display()
    )]
    Damaged { path: PathBuf, message: String },
    #[error(
        "session \"{id}\" is in use by another dsh process{}; wait for it to finish or stop it, \
         then retry",
        pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    Locked { id: String, pid: Option<u32> },
    #[error(
        "no session \"{id}\" in {}: check the id (the --json `session` event gives it), or leave \
         --session-id out to start a new session",
        root.display()
    )]
    UnknownSession { id: String, root: PathBuf },
    #[error(
        "session \"{id}\" was recorded in {recorded}, not in this directory ({here}); run dsh \
         from {recorded} to resume it"
    )]
    OtherDirectory {
        id: String,
        recorded: String,
        here: String,
    },
    /// A subagent's session (a `subagent` or `subagent_fork` child), which the agent that
    /// started it owns. The first clause is the reference's text.
    #[error(
        "session \"{id}\" is a subagent or forked session and cannot be driven directly: it \
         belongs to session \"{parent}\", which can be continued, or this one's history can \
         start a session of your own with --fork (--session-id {id} --fork)"
    )]
    Child { id: String, parent: String },
    #[error(
        "\"{0}\" is not a session id: ids look like session-<uuid>, as the --json `session` event gives them"
    )]
    BadSessionId(String),
    /// A title a session cannot be given: what is wrong with it.
    #[error("{0}")]
    BadTitle(String),
}

impl CoreError {
    /// What kind of setup failure this is, as front ends match it.
    pub fn kind(&self) -> SetupKind {
        match self {
            CoreError::Log { .. } => SetupKind::SessionLog,
            CoreError::Damaged { .. } => SetupKind::SessionDamaged,
            CoreError::Locked { .. } => SetupKind::SessionLocked,
            CoreError::UnknownSession { .. } | CoreError::BadSessionId(_) => {
                SetupKind::SessionNotFound
            }
            CoreError::OtherDirectory { .. } => SetupKind::SessionElsewhere,
            CoreError::Child { .. } => SetupKind::SessionSubagent,
            CoreError::BadTitle(_) => SetupKind::SessionTitle,
        }
    }

    /// The code an `error` event carries for this failure.
    pub fn code(&self) -> &'static str {
        self.kind().code()
    }
}

impl From<CoreError> for SetupError {
    fn from(e: CoreError) -> Self {
        SetupError::of(e.kind(), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Supervisors parse these codes: they are the reference's, whatever the kinds are called.
    #[test]
    fn each_failure_keeps_its_wire_code() {
        let id = || "session-x".to_owned();
        let cases = [
            (
                CoreError::Log {
                    path: PathBuf::new(),
                    source: std::io::Error::other("x"),
                },
                "SESSION_LOG",
            ),
            (
                CoreError::Damaged {
                    path: PathBuf::new(),
                    message: String::new(),
                },
                "SESSION_DAMAGED",
            ),
            (
                CoreError::Locked {
                    id: id(),
                    pid: None,
                },
                "SESSION_LOCKED",
            ),
            (
                CoreError::UnknownSession {
                    id: id(),
                    root: PathBuf::new(),
                },
                "SESSION_NOT_FOUND",
            ),
            (CoreError::BadSessionId(id()), "SESSION_NOT_FOUND"),
            (
                CoreError::OtherDirectory {
                    id: id(),
                    recorded: String::new(),
                    here: String::new(),
                },
                "SESSION_ELSEWHERE",
            ),
            (
                CoreError::Child {
                    id: id(),
                    parent: id(),
                },
                "SESSION_SUBAGENT",
            ),
            (CoreError::BadTitle(String::new()), "SESSION_TITLE"),
        ];
        for (error, code) in cases {
            assert_eq!(error.code(), code);
            let kind = error.kind();
            let setup = SetupError::from(error);
            assert_eq!((setup.code.as_ref(), setup.kind()), (code, kind));
        }
    }
}
