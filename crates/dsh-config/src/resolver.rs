//! What resolving reads (the environment, the files) and writes (the rows), and how it fails:
//! the machinery `settings` and `route` share, kept apart so that neither reaches into the
//! other.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use super::layers::ConfigFiles;
use super::shown::{SettingRow, Shown};
use super::sourced::{Source, Sourced};

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

impl From<super::layers::ConfigError> for SetupError {
    fn from(e: super::layers::ConfigError) -> Self {
        SetupError::config(e.to_string())
    }
}

impl From<crate::DotenvError> for SetupError {
    fn from(e: crate::DotenvError) -> Self {
        SetupError::config(e.to_string())
    }
}

/// A flag's value, sourced to the flag.
pub(super) fn flag<T>(value: Option<T>, name: &'static str) -> Option<Sourced<T>> {
    value.map(|v| Sourced::new(v, Source::Flag(name)))
}

/// Picks values and records each one as a row.
pub(super) struct Resolver<'a> {
    pub(super) files: &'a ConfigFiles,
    pub(super) rows: Vec<SettingRow>,
}

impl<'a> Resolver<'a> {
    /// The files' value of `key`, with the file that set it.
    pub(super) fn file<T>(&self, key: &str, value: Option<T>) -> Option<Sourced<T>> {
        value.map(|v| Sourced::new(v, Source::File(self.files.source_of(key))))
    }

    /// The first value given, highest layer first, else the default; recorded under `key`.
    pub(super) fn setting<T: Shown, const N: usize>(
        &mut self,
        key: &str,
        layers: [Option<Sourced<T>>; N],
        default: T,
    ) -> Sourced<T> {
        let value = layers
            .into_iter()
            .flatten()
            .next()
            .unwrap_or_else(|| Sourced::default(default));
        self.record(key, &value);
        value
    }

    /// A file value in milliseconds.
    pub(super) fn millis(
        &mut self,
        key: &str,
        value: Option<u64>,
        default: Duration,
    ) -> Sourced<Duration> {
        let ms = self.setting(
            key,
            [self.file(key, value)],
            u64::try_from(default.as_millis()).unwrap_or(u64::MAX),
        );
        Sourced::new(Duration::from_millis(ms.value), ms.source)
    }

    pub(super) fn record<T: Shown>(&mut self, key: &str, value: &Sourced<T>) {
        self.rows.push(SettingRow::new(
            key.to_owned(),
            value.value.shown(),
            &value.source,
        ));
    }

    /// Says what the last recorded value means when it is none (`"none"` alone says little).
    pub(super) fn none_means<T>(&mut self, value: &Sourced<Option<T>>, meaning: &str) {
        if value.value.is_none() {
            self.explain_last(meaning);
        }
    }

    /// Shows the last recorded value as what it means for this run, where the value alone
    /// would mislead (a switch the route's wire format does not read).
    pub(super) fn explain_last(&mut self, meaning: &str) {
        if let Some(row) = self.rows.last_mut() {
            row.value = format!("{meaning:?}");
        }
    }

    /// A row whose value and source are said in words.
    pub(super) fn record_text(&mut self, key: &str, value: String, source: String) {
        self.rows
            .push(SettingRow::described(key.to_owned(), value, source));
    }

    pub(super) fn files(&self) -> &'a ConfigFiles {
        self.files
    }
}
