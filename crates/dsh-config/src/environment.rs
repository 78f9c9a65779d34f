//! What every part of configuration reads and how it fails: the process environment as a
//! snapshot, and the error a run that cannot be set up ends with. A leaf: it names nothing else
//! of the crate.

use std::collections::BTreeMap;
use std::fmt;

/// The process environment as the settings read it: a snapshot, so a run and `--dump-config`
/// (and tests) resolve from the same values.
#[derive(Clone, Default)]
pub struct Environment {
    vars: BTreeMap<String, String>,
}

/// Names only: the values hold secrets.
impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

impl Environment {
    /// This process's environment; a name or value that is not UTF-8 is read lossily, as dsh
    /// has always read its variables.
    pub fn from_process() -> Self {
        Environment::from_pairs(std::env::vars_os().map(|(name, value)| {
            (
                name.to_string_lossy().into_owned(),
                value.to_string_lossy().into_owned(),
            )
        }))
    }

    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        Environment {
            vars: pairs.into_iter().collect(),
        }
    }

    /// The value of `name` as exported, empty included.
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    pub(crate) fn snapshot(&self) -> BTreeMap<String, String> {
        self.vars.clone()
    }

    /// The value of `name` when it is set to something other than blanks.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.raw(name).filter(|v| !v.trim().is_empty())
    }
}

/// A setting that cannot be used, or a run that cannot be set up: said as `dsh: <message>`
/// with a `hint: <hint>` line after it when there is one, and in the `--json` stream as an
/// `error` event with the code. Front ends match [`SetupError::kind`], never the code's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SetupError {
    pub message: String,
    /// What kind of failure, for supervisors (`CONFIG`, `AUTH`, `SESSION_NOT_FOUND`...;
    /// `docs/cli.md` lists them). [`SetupError::kind`] is the same as a type.
    pub code: std::borrow::Cow<'static, str>,
    /// What to do about it, when the message alone does not say: data, which each front end
    /// shows its own way (the terminal as a `hint:` line).
    pub hint: Option<String>,
}

impl SetupError {
    pub fn new(code: impl Into<std::borrow::Cow<'static, str>>, message: String) -> Self {
        SetupError {
            message,
            code: code.into(),
            hint: None,
        }
    }

    /// A failure of a known kind: its code is the kind's.
    pub fn of(kind: SetupKind, message: String) -> Self {
        SetupError::new(kind.code(), message)
    }

    /// A setting that cannot be used: a config file, a flag's value, the environment.
    pub fn config(message: String) -> Self {
        SetupError::of(SetupKind::Config, message)
    }

    /// The same failure with what to do about it.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// What kind of failure this is, for a front end to act on.
    pub fn kind(&self) -> SetupKind {
        SetupKind::of_code(&self.code)
    }

    /// The message and, on a line of its own, the hint: as a terminal shows it, and as the
    /// `--json` `error` event carries it.
    pub fn with_hint_line(&self) -> String {
        match &self.hint {
            Some(hint) => format!("{}\nhint: {hint}", self.message),
            None => self.message.clone(),
        }
    }
}

/// What kind of setup failure a [`SetupError`] is. Each kind has the code the `--json`
/// `error` event carries (`docs/cli.md`'s table; supervisors parse them, so they never change).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SetupKind {
    Config,
    Auth,
    NoHome,
    /// No session of that id in this directory, or not a session id at all.
    SessionNotFound,
    /// The session was recorded in another directory.
    SessionElsewhere,
    SessionLocked,
    SessionDamaged,
    /// A subagent's session, which its parent owns.
    SessionSubagent,
    SessionLog,
    SessionTitle,
    McpStartup,
    McpSignIn,
    OutputSchemaFile,
    OutputFile,
    Task,
    Signal,
    RunTimeout,
    Internal,
    /// Any other code: a provider's failure while its client was built, a subcommand's own.
    Other,
}

/// Each kind with its code: the one place the codes are spelled for matching.
const CODES: &[(SetupKind, &str)] = &[
    (SetupKind::Config, "CONFIG"),
    (SetupKind::Auth, "AUTH"),
    (SetupKind::NoHome, "NO_HOME"),
    (SetupKind::SessionNotFound, "SESSION_NOT_FOUND"),
    (SetupKind::SessionElsewhere, "SESSION_ELSEWHERE"),
    (SetupKind::SessionLocked, "SESSION_LOCKED"),
    (SetupKind::SessionDamaged, "SESSION_DAMAGED"),
    (SetupKind::SessionSubagent, "SESSION_SUBAGENT"),
    (SetupKind::SessionLog, "SESSION_LOG"),
    (SetupKind::SessionTitle, "SESSION_TITLE"),
    (SetupKind::McpStartup, "MCP_STARTUP"),
    (SetupKind::McpSignIn, "MCP_SIGN_IN"),
    (SetupKind::OutputSchemaFile, "OUTPUT_SCHEMA_FILE"),
    (SetupKind::OutputFile, "OUTPUT_FILE"),
    (SetupKind::Task, "TASK"),
    (SetupKind::Signal, "SIGNAL"),
    (SetupKind::RunTimeout, "RUN_TIMEOUT"),
    (SetupKind::Internal, "INTERNAL"),
];

impl SetupKind {
    /// The code an `error` event carries for this kind; `OTHER` for [`SetupKind::Other`],
    /// whose errors carry their own.
    pub fn code(self) -> &'static str {
        CODES
            .iter()
            .find(|(kind, _)| *kind == self)
            .map_or("OTHER", |(_, code)| code)
    }

    /// The kind a code names.
    pub fn of_code(code: &str) -> SetupKind {
        CODES
            .iter()
            .find(|(_, known)| *known == code)
            .map_or(SetupKind::Other, |(kind, _)| *kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_own_code_and_is_read_back_from_it() {
        for (kind, code) in CODES {
            assert_eq!(kind.code(), *code);
            assert_eq!(SetupKind::of_code(code), *kind);
            assert_eq!(SetupError::of(*kind, String::new()).kind(), *kind);
        }
        let codes: std::collections::BTreeSet<_> = CODES.iter().map(|(_, c)| c).collect();
        assert_eq!(codes.len(), CODES.len(), "a code named twice");
        assert_eq!(
            SetupError::new("RATE_LIMIT", String::new()).kind(),
            SetupKind::Other
        );
    }

    #[test]
    fn a_hint_is_its_own_line_not_part_of_the_message() {
        let error = SetupError::config("no such file".into()).with_hint("create it");
        assert_eq!(error.to_string(), "no such file");
        assert_eq!(error.with_hint_line(), "no such file\nhint: create it");
        assert_eq!(SetupError::config("x".into()).with_hint_line(), "x");
    }
}
