//! `[sessions]`: how the session log is written.

use serde::Deserialize;

use crate::files::{Compression, parsed};
use crate::resolver::Resolver;
use crate::sourced::Sourced;
use crate::trust_look::Guard;

/// No key here widens anything ([`crate::trust_look::Widens`]).
pub(crate) const GUARDS: &[Guard] = &[Guard::neither(
    "sessions.fsync",
    "how the log reaches the disk, not what is in it",
)];

/// The session logs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionsConfig {
    /// fsync every record (default false: each record is one write, which survives the
    /// process dying but not the machine losing power).
    pub fsync: Option<bool>,
    /// "none" (plain JSON lines, the default) or "zstd".
    #[serde(deserialize_with = "parsed")]
    pub compression: Option<Compression>,
}

/// How the session log is written.
#[derive(Debug, Clone)]
pub struct SessionLog {
    pub fsync: Sourced<bool>,
    pub compression: Sourced<Compression>,
}

pub(crate) fn resolve(r: &mut Resolver<'_>, file: &SessionsConfig) -> SessionLog {
    SessionLog {
        fsync: r.file_setting("sessions.fsync", file.fsync, false),
        compression: r.file_setting("sessions.compression", file.compression, Compression::None),
    }
}
