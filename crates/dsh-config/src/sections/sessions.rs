//! `[sessions]`: how the session log is written.

use serde::Deserialize;

use crate::files::{Compression, parsed};
use crate::flags::Flags;
use crate::resolver::{Resolver, flag};
use crate::sourced::Sourced;
use crate::trust_look::{Guard, Reason};

/// How each key can widen ([`crate::trust_look::Widens`]): a title request is paid for, so a
/// workspace may turn titles off but not on where yours (or the headless default) has them off.
pub(crate) const GUARDS: &[Guard] = &[
    Guard::neither(
        "sessions.fsync",
        "how the log reaches the disk, not what is in it",
    ),
    Guard::switch("sessions.titles", true, false, Reason::Cost),
];

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
    /// Whether a session gets a title written by the model after its first turn (one short
    /// request on the session's route). Unset: on for the interactive front ends (terminal
    /// UI, web app, ACP), off for headless runs unless `--title` asks.
    pub titles: Option<bool>,
}

/// How the session log is written.
#[derive(Debug, Clone)]
pub struct SessionLog {
    pub fsync: Sourced<bool>,
    pub compression: Sourced<Compression>,
    /// Whether the session gets a title request after its first turn.
    pub titles: Sourced<bool>,
}

pub(crate) fn resolve(r: &mut Resolver<'_>, file: &SessionsConfig, flags: &Flags) -> SessionLog {
    let fsync = r.file_setting("sessions.fsync", file.fsync, false);
    let compression = r.file_setting("sessions.compression", file.compression, Compression::None);
    // A headless run pays for no title it did not ask for: the default follows the front end.
    let titles = r.setting(
        "sessions.titles",
        [
            flag(flags.title.then_some(true), "--title"),
            r.file("sessions.titles", file.titles),
        ],
        flags.interactive,
    );
    SessionLog {
        fsync,
        compression,
        titles,
    }
}
