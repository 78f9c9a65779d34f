use std::path::PathBuf;

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
    #[error("no home directory to keep sessions in: set DSH_HOME (or HOME)")]
    NoHome,
}
