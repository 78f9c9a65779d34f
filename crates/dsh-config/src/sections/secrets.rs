//! `[secrets]`: whether the run's secrets are taken out of what tools return.

use serde::Deserialize;

use crate::resolver::Resolver;
use crate::sourced::Sourced;
use crate::trust_look::{Guard, Reason};

/// How each key can let secrets through ([`crate::trust_look::Widens`]).
pub(crate) const GUARDS: &[Guard] = &[Guard::switch(
    "secrets.redact",
    false,
    true,
    Reason::Secrets,
)];

/// Secrets in what tools return.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SecretsConfig {
    /// Replace the values of the keys, tokens, headers and URL credentials dsh knows with
    /// `[REDACTED]` in tool results, before the log, the stream and the model see them
    /// (default true).
    pub redact: Option<bool>,
}

pub(crate) fn resolve(r: &mut Resolver<'_>, file: &SecretsConfig) -> Sourced<bool> {
    r.file_setting("secrets.redact", file.redact, true)
}
