//! Where a command runs: dsh's home (`$DSH_HOME`, else `~/.dsh`) and the working directory.

use std::path::PathBuf;

/// `(home, working directory)`, or what keeps either from being used.
pub(crate) fn home_and_cwd() -> Result<(PathBuf, PathBuf), String> {
    let home = dsh_core::dsh_home(
        std::env::var("DSH_HOME").ok().as_deref(),
        std::env::var_os("HOME").map(PathBuf::from).as_deref(),
    )
    .map_err(|e| e.to_string())?;
    Ok((home, cwd().map_err(|e| e.0)?))
}

/// The working directory.
pub(crate) fn cwd() -> Result<PathBuf, dsh_core::SetupError> {
    std::env::current_dir()
        .map_err(|e| dsh_core::SetupError(format!("cannot use the working directory: {e}")))
}
