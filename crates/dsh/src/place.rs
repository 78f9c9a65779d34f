//! Where a command runs: dsh's home (as core resolves it: `$DSH_HOME`, else `~/.dsh`) and the
//! working directory, and the settings that hold there.

use std::path::PathBuf;

use dsh_core::{Environment, Flags, Settings, SetupError};

/// `(home, working directory)`, or what keeps either from being used.
pub(crate) fn home_and_cwd() -> Result<(PathBuf, PathBuf), SetupError> {
    let home = dsh_core::config::home(&Environment::from_process())?;
    Ok((home.value, cwd()?))
}

/// The working directory.
pub(crate) fn cwd() -> Result<PathBuf, SetupError> {
    std::env::current_dir()
        .map_err(|e| SetupError::config(format!("cannot use the working directory: {e}")))
}

/// The settings in force in the working directory, with `flags` over the files and the
/// environment.
pub(crate) fn settings(flags: &Flags) -> Result<Settings, SetupError> {
    Settings::load(cwd()?, &Environment::from_process(), flags)
}
