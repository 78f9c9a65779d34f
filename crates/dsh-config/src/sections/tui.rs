//! `[tui]`: what the terminal UI does beyond the run itself (when it notifies you).

use serde::Deserialize;

use crate::files::{Notify, parsed};
use crate::resolver::Resolver;

/// The terminal UI.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TuiConfig {
    /// When to notify: off, long-turns (default) or always.
    #[serde(deserialize_with = "parsed")]
    pub notify: Option<Notify>,
}

pub(crate) fn resolve(r: &mut Resolver<'_>, file: &TuiConfig) -> Notify {
    r.file_setting("tui.notify", file.notify, Notify::LongTurns)
        .value
}
