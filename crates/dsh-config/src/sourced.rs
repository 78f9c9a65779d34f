//! A resolved value and where it came from: the vocabulary every layer of configuration, and
//! every row `--dump-config` prints, shares.

use std::fmt;
use std::path::PathBuf;

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// dsh's built-in default.
    Default,
    /// The config file (or patch) that set it last.
    File(PathBuf),
    /// An environment variable.
    Env(&'static str),
    /// A command-line flag.
    Flag(&'static str),
    /// What the agent preset of that name sets (`preset`, `--preset`).
    Preset(&'static str),
    /// What the resumed session last ran under (its permission mode and approval policy).
    Session,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(path) => write!(f, "{}", path.display()),
            Source::Env(name) | Source::Flag(name) => f.write_str(name),
            Source::Preset(name) => write!(f, "preset {name}"),
            Source::Session => f.write_str("the session"),
        }
    }
}

/// A resolved value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

impl<T> Sourced<T> {
    pub fn new(value: T, source: Source) -> Self {
        Sourced { value, source }
    }

    /// A built-in default.
    pub(super) fn default(value: T) -> Self {
        Sourced::new(value, Source::Default)
    }
}
