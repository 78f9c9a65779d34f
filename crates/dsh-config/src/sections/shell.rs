//! `[shell]`: which inherited variables are kept from commands.

use serde::Deserialize;

use crate::resolver::Resolver;
use crate::sourced::Sourced;

/// How commands run.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShellConfig {
    /// Name fragments (any case, anywhere in the name) of inherited variables not passed to
    /// commands; replaces the default list when given.
    pub scrub: Option<Vec<String>>,
}

/// `shell.scrub`: the name fragments of variables kept from commands, upper-cased.
pub(crate) fn resolve(r: &mut Resolver<'_>, file: &ShellConfig) -> Sourced<Vec<String>> {
    let scrub = (file.scrub.as_ref()).map(|s| s.iter().map(|f| f.to_uppercase()).collect());
    let default = (dsh_tools::DEFAULT_SCRUB.iter()).map(|s| (*s).to_owned());
    r.file_setting("shell.scrub", scrub, default.collect())
}
