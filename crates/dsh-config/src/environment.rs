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

/// A setting that cannot be used, or a run that cannot be set up: said as `dsh: <message>`,
/// and in the `--json` stream as an `error` event with the code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SetupError {
    pub message: String,
    /// What kind of failure, for supervisors (`CONFIG`, `AUTH`, `SESSION_NOT_FOUND`...;
    /// `docs/cli.md` lists them).
    pub code: std::borrow::Cow<'static, str>,
}

impl SetupError {
    pub fn new(code: impl Into<std::borrow::Cow<'static, str>>, message: String) -> Self {
        SetupError {
            message,
            code: code.into(),
        }
    }

    /// A setting that cannot be used: a config file, a flag's value, the environment.
    pub fn config(message: String) -> Self {
        SetupError::new("CONFIG", message)
    }
}
